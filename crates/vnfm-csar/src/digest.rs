//! Artifact digests: the algorithms SOL004 allows and streaming hex digests.
//!
//! Manifests and TOSCA.meta name algorithms loosely (`SHA-256`, `SHA256`, `sha-256`,
//! `SHA_256`); [`DigestAlgorithm::parse`] accepts all of those for SHA-256, SHA-384 and
//! SHA-512 and nothing else. Digests are computed by streaming, never by loading a file.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Read};

use sha2::{Digest, Sha256, Sha384, Sha512};

/// A digest algorithm usable in a manifest or TOSCA.meta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DigestAlgorithm {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl DigestAlgorithm {
    /// Parses an algorithm name as packages write it: case, `-` and `_` are ignored.
    pub fn parse(name: &str) -> Option<DigestAlgorithm> {
        let squashed: String = name
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .map(|c| c.to_ascii_uppercase())
            .collect();
        match squashed.as_str() {
            "SHA256" => Some(DigestAlgorithm::Sha256),
            "SHA384" => Some(DigestAlgorithm::Sha384),
            "SHA512" => Some(DigestAlgorithm::Sha512),
            _ => None,
        }
    }

    /// The canonical name, e.g. `SHA-256`.
    pub fn name(self) -> &'static str {
        match self {
            DigestAlgorithm::Sha256 => "SHA-256",
            DigestAlgorithm::Sha384 => "SHA-384",
            DigestAlgorithm::Sha512 => "SHA-512",
        }
    }

    /// Length of the digest in hex characters.
    pub fn hex_len(self) -> usize {
        match self {
            DigestAlgorithm::Sha256 => 64,
            DigestAlgorithm::Sha384 => 96,
            DigestAlgorithm::Sha512 => 128,
        }
    }

    /// Streams `reader` to its end and returns the lowercase hex digest.
    pub fn digest_hex(self, reader: &mut dyn Read) -> io::Result<String> {
        match self {
            DigestAlgorithm::Sha256 => stream::<Sha256>(reader),
            DigestAlgorithm::Sha384 => stream::<Sha384>(reader),
            DigestAlgorithm::Sha512 => stream::<Sha512>(reader),
        }
    }
}

impl fmt::Display for DigestAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Size of the read buffer: large enough that hashing a disk image is not dominated by system
/// calls.
const READ_BUFFER: usize = 64 * 1024;

thread_local! {
    /// The read buffer of this thread's digests, zeroed once and reused: a package has dozens
    /// of small artifacts, and a fresh zeroed 64 KiB per file cost more than hashing them.
    static READ_BUFFER_OF_THREAD: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn stream<D: Digest>(reader: &mut dyn Read) -> io::Result<String> {
    READ_BUFFER_OF_THREAD.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < READ_BUFFER {
                buf.resize(READ_BUFFER, 0);
            }
            stream_with::<D>(reader, &mut buf)
        }
        // A reader that itself computes a digest while being read.
        Err(_) => stream_with::<D>(reader, &mut vec![0; READ_BUFFER]),
    })
}

fn stream_with<D: Digest>(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<String> {
    let mut hasher = D::new();
    loop {
        match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// True when `declared` (as written in a package, any case, surrounding spaces ignored) is a
/// well-formed hex digest for `algorithm`.
pub fn is_well_formed(algorithm: DigestAlgorithm, declared: &str) -> bool {
    let d = declared.trim();
    d.len() == algorithm.hex_len() && d.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spellings_found_in_packages() {
        for name in [
            "SHA-256",
            "SHA256",
            "sha-256",
            "sha256",
            "Sha_256",
            " SHA-256 ",
        ] {
            assert_eq!(
                DigestAlgorithm::parse(name),
                Some(DigestAlgorithm::Sha256),
                "{name}"
            );
        }
        assert_eq!(
            DigestAlgorithm::parse("SHA-384"),
            Some(DigestAlgorithm::Sha384)
        );
        assert_eq!(
            DigestAlgorithm::parse("sha512"),
            Some(DigestAlgorithm::Sha512)
        );
        for name in ["MD5", "SHA-1", "SHA3-256", "", "SHA-2"] {
            assert_eq!(DigestAlgorithm::parse(name), None, "{name}");
        }
    }

    #[test]
    fn computes_known_digests() {
        // FIPS 180 test vectors for "abc".
        let abc = |alg: DigestAlgorithm| alg.digest_hex(&mut &b"abc"[..]).unwrap();
        assert_eq!(
            abc(DigestAlgorithm::Sha256),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            abc(DigestAlgorithm::Sha384),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
        );
        assert_eq!(
            abc(DigestAlgorithm::Sha512),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
    }

    #[test]
    fn a_reader_may_compute_a_digest_while_it_is_read() {
        /// Hashes "abc" on its first read, while the outer digest holds the thread's buffer.
        struct Nested<'a>(&'a [u8], Option<String>);
        impl Read for Nested<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1.is_none() {
                    self.1 = Some(DigestAlgorithm::Sha256.digest_hex(&mut &b"abc"[..])?);
                }
                self.0.read(buf)
            }
        }
        let data = vec![9u8; 100_000];
        let mut reader = Nested(&data, None);
        let outer = DigestAlgorithm::Sha512.digest_hex(&mut reader).unwrap();
        assert_eq!(outer, hex::encode(Sha512::digest(&data)));
        assert_eq!(
            reader.1.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        // The buffer is usable again afterwards.
        let again = DigestAlgorithm::Sha256.digest_hex(&mut &data[..]).unwrap();
        assert_eq!(again, hex::encode(Sha256::digest(&data)));
    }

    #[test]
    fn streams_input_larger_than_the_buffer() {
        let data = vec![7u8; 200_000];
        let streamed = DigestAlgorithm::Sha256.digest_hex(&mut &data[..]).unwrap();
        assert_eq!(streamed, hex::encode(Sha256::digest(&data)));
    }

    #[test]
    fn checks_digest_shape() {
        let ok = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert!(is_well_formed(DigestAlgorithm::Sha256, ok));
        assert!(is_well_formed(DigestAlgorithm::Sha256, &ok.to_uppercase()));
        assert!(!is_well_formed(DigestAlgorithm::Sha512, ok));
        assert!(!is_well_formed(
            DigestAlgorithm::Sha256,
            &ok.replace('b', "g")
        ));
    }
}
