use super::*;

fn entry(size: u64) -> FileEntry {
    FileEntry {
        size,
        compressed: 0,
        index: 0,
    }
}

fn drain(g: &mut Guarded<'_, impl Read>) -> io::Result<u64> {
    io::copy(g, &mut io::sink())
}

#[test]
fn reading_stops_at_the_listed_size() {
    let limits = Limits::default();
    let source = io::repeat(0).take(10 << 20);
    let mut g = Guarded::new(source, "Files/x", &entry(1 << 20), Some(1 << 20), &limits);
    assert!(drain(&mut g).is_err());
    assert!(g.produced <= (1 << 20) + 64 * 1024, "{}", g.produced);
    let err = g.finish(Ok(()), |r| panic!("{r}")).unwrap_err();
    assert_eq!(err.code(), "csar.zip-bomb");
}

#[test]
fn reading_stops_at_the_compression_ratio() {
    let limits = Limits::default();
    // Declared 100 MiB from 1000 compressed bytes: the ratio check trips just past 1 MiB.
    let source = io::repeat(0).take(100 << 20);
    let mut g = Guarded::new(source, "Files/x", &entry(100 << 20), Some(1000), &limits);
    assert!(drain(&mut g).is_err());
    assert!(
        g.produced <= RATIO_CHECK_MIN_BYTES + 64 * 1024,
        "{}",
        g.produced
    );
    let err = g.finish(Ok(()), |r| panic!("{r}")).unwrap_err();
    assert_eq!(err.code(), "csar.zip-bomb");
}

#[test]
fn a_directory_file_that_grew_is_too_large() {
    let limits = Limits::default();
    let mut g = Guarded::new(
        io::repeat(1).take(5000),
        "Files/x",
        &entry(100),
        None,
        &limits,
    );
    assert!(drain(&mut g).is_err());
    let err = g.finish(Ok(()), |r| panic!("{r}")).unwrap_err();
    assert_eq!(err.code(), "csar.too-large");
}

#[test]
fn honest_entries_read_completely() {
    let limits = Limits::default();
    let mut g = Guarded::new(
        io::repeat(1).take(5000),
        "Files/x",
        &entry(5000),
        Some(4000),
        &limits,
    );
    assert_eq!(drain(&mut g).unwrap(), 5000);
    assert_eq!(g.finish(Ok(7), |r| panic!("{r}")).unwrap(), 7);
}

#[test]
fn the_declared_entry_count_is_read_from_the_end_record() {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for i in 0..3 {
        zip.start_file(format!("f{i}"), zip::write::SimpleFileOptions::default())
            .unwrap();
    }
    let bytes = zip.finish().unwrap().into_inner();
    let len = bytes.len() as u64;
    let mut reader: Box<dyn ReadSeek> = Box::new(Cursor::new(bytes));
    assert_eq!(declared_entry_count(&mut reader, len).unwrap(), 3);
    let mut garbage: Box<dyn ReadSeek> = Box::new(Cursor::new(vec![0u8; 10]));
    assert_eq!(declared_entry_count(&mut garbage, 10).unwrap(), 0);
}
