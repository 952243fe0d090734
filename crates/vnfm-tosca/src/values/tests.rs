use super::*;

#[test]
fn sizes_normalize_to_bytes_case_insensitively() {
    assert_eq!(parse_scalar("512 MB", Prim::Size).ok(), Some(512e6));
    assert_eq!(
        parse_scalar("1 GiB", Prim::Size).ok(),
        Some(1_073_741_824.0)
    );
    assert_eq!(
        parse_scalar("1 gib", Prim::Size).ok(),
        Some(1_073_741_824.0)
    );
    assert_eq!(parse_scalar("2 KB", Prim::Size).ok(), Some(2000.0));
    assert_eq!(parse_scalar("2kB", Prim::Size).ok(), Some(2000.0));
    assert_eq!(
        parse_scalar("3 TiB", Prim::Size).ok(),
        Some(3.0 * 1_099_511_627_776.0)
    );
    assert!(
        parse_scalar("3 parsecs", Prim::Size)
            .unwrap_err()
            .to_string()
            .contains("parsecs")
    );
    assert!(matches!(
        parse_scalar("MB", Prim::Size),
        Err(crate::Error::ScalarNumber { .. })
    ));
    assert!(matches!(
        parse_scalar("12", Prim::Size),
        Err(crate::Error::ScalarUnitMissing)
    ));
    let n = Node::synthetic(Value::Str("1.5 KiB".into()));
    assert_eq!(size_bytes(&n), Some(1536));
}

#[test]
fn other_scalar_units() {
    assert_eq!(parse_scalar("2 m", Prim::Time).ok(), Some(120.0));
    assert_eq!(parse_scalar("500 ms", Prim::Time).ok(), Some(0.5));
    assert_eq!(parse_scalar("2.4 GHz", Prim::Frequency).ok(), Some(2.4e9));
    assert_eq!(parse_scalar("1 Bps", Prim::Bitrate).ok(), Some(8.0));
    assert_eq!(parse_scalar("1 bps", Prim::Bitrate).ok(), Some(1.0));
    assert_eq!(parse_scalar("10 Mbps", Prim::Bitrate).ok(), Some(1e7));
    assert!(parse_scalar("1 GB", Prim::Time).is_err());
}

#[test]
fn versions_parse_and_order() {
    assert!(parse_version("1.0").is_some());
    assert!(parse_version("1.2.3.beta-4").is_some());
    assert!(parse_version("1").is_none());
    assert!(parse_version("1.x").is_none());
    assert!(parse_version("1.2-3").is_none());
    assert!(parse_version("1.10").unwrap() > parse_version("1.9").unwrap());
}

#[test]
fn timestamps() {
    for ok in [
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2002-12-14T00:00:00Z",
    ] {
        assert!(is_timestamp(ok), "{ok}");
    }
    for bad in ["yesterday", "2001-12", "2001-12-14T25", "14/12/2001"] {
        assert!(!is_timestamp(bad), "{bad}");
    }
}

#[test]
fn comparisons_use_the_value_type() {
    let s = |t: &str| Node::synthetic(Value::Str(t.into()));
    assert_eq!(
        compare(&s("1 GB"), &s("512 MB"), Prim::Size),
        Some(std::cmp::Ordering::Greater)
    );
    assert_eq!(
        compare(&s("1.10"), &s("1.9"), Prim::Version),
        Some(std::cmp::Ordering::Greater)
    );
    assert!(equal(&s("1024 MiB"), &s("1 GiB"), Prim::Size));
}

#[test]
fn patterns_match_the_whole_string_and_bad_ones_are_none() {
    assert!(compiled("[a-z]+").unwrap().is_match("abc"));
    assert!(!compiled("[a-z]+").unwrap().is_match("abc1"));
    assert!(compiled("(^a$)|(^b$)").unwrap().is_match("b"));
    assert!(compiled("(").is_none());
}

#[test]
fn function_calls_are_recognized_with_shapes() {
    let n = crate::yaml::parse(
        "f",
        "a: { get_input: x }\nb: { concat: [] }\nc: { other: 1 }\n",
    )
    .unwrap();
    let (name, arg, _) = function_call(n.get("a").unwrap()).unwrap();
    assert_eq!(
        (name, function_shape_problem(name, arg)),
        ("get_input", None)
    );
    let (name, arg, _) = function_call(n.get("b").unwrap()).unwrap();
    assert!(function_shape_problem(name, arg).is_some());
    assert!(function_call(n.get("c").unwrap()).is_none());
}
