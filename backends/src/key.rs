//! Mapping of S3 object keys to relative paths inside a folder.
//!
//! The mapping is exact or refused: a key that cannot be a path (`.`/`..` segments, empty segments,
//! NUL, overlong segments or paths, the reserved staging directory) is rejected, never approximated.

use crate::HIDDEN_DIR;

/// Longest path (bytes) a key may map to, matching Linux `PATH_MAX` minus the terminating NUL.
pub const MAX_PATH_BYTES: usize = 4095;
/// Longest single path segment (bytes), matching `NAME_MAX`.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Why a key cannot be stored as a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the object key is empty")]
    Empty,
    #[error("the object key is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    #[error("the object key has a path segment longer than {MAX_SEGMENT_BYTES} bytes")]
    SegmentTooLong,
    #[error("the object key has an empty path segment (leading '/' or '//')")]
    EmptySegment,
    #[error("the object key has a '.' or '..' path segment")]
    DotSegment,
    #[error("the object key contains a NUL byte")]
    Nul,
    #[error("the object key addresses the gateway's reserved directory")]
    Reserved,
}

/// A validated key: the directory segments and leaf it maps to.
///
/// A key ending in `/` is a directory marker: every segment is a directory and `is_dir` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPath {
    segments: Vec<String>,
    is_dir: bool,
}

impl ObjectPath {
    /// Validates `key` and splits it into path segments.
    pub fn parse(key: &str) -> Result<Self, KeyError> {
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        if key.len() > MAX_PATH_BYTES {
            return Err(KeyError::TooLong);
        }
        if key.contains('\0') {
            return Err(KeyError::Nul);
        }
        let (body, is_dir) = match key.strip_suffix('/') {
            Some(b) => (b, true),
            None => (key, false),
        };
        if body.is_empty() {
            return Err(KeyError::EmptySegment);
        }
        let mut segments = Vec::new();
        for seg in body.split('/') {
            match seg {
                "" => return Err(KeyError::EmptySegment),
                "." | ".." => return Err(KeyError::DotSegment),
                s if s.len() > MAX_SEGMENT_BYTES => return Err(KeyError::SegmentTooLong),
                s => segments.push(s.to_owned()),
            }
        }
        if segments[0] == HIDDEN_DIR {
            return Err(KeyError::Reserved);
        }
        Ok(Self { segments, is_dir })
    }

    /// Builds the path of a directory from its segments (used by listings).
    pub fn dir(segments: Vec<String>) -> Self {
        Self { segments, is_dir: true }
    }

    /// True for directory-marker keys (ending in `/`).
    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    /// All segments, leaf last.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The segments of the containing directory.
    pub fn parent(&self) -> &[String] {
        &self.segments[..self.segments.len() - 1]
    }

    /// The last segment.
    pub fn leaf(&self) -> &str {
        self.segments.last().expect("parse never yields an empty path")
    }

    /// The path relative to the folder root, `/`-joined.
    pub fn rel(&self) -> String {
        self.segments.join("/")
    }

    /// The S3 key this path came from.
    pub fn key(&self) -> String {
        let mut k = self.rel();
        if self.is_dir {
            k.push('/');
        }
        k
    }

    /// For a directory marker, the name of the file that holds its payload in the folder's
    /// hidden [`MARKERS_DIR`](crate::layout::MARKERS_DIR): the SHA-256 of the key in hex, so any key,
    /// however deep or long, maps to one flat, fixed-length name.
    pub fn marker_name(&self) -> Option<String> {
        use sha2::Digest;
        self.is_dir.then(|| {
            sha2::Sha256::digest(self.key().as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_map_to_segments() {
        let p = ObjectPath::parse("a/b/c.txt").unwrap();
        assert_eq!(p.segments(), ["a", "b", "c.txt"]);
        assert!(!p.is_dir());
        assert_eq!(p.parent(), ["a", "b"]);
        assert_eq!(p.leaf(), "c.txt");
        assert_eq!(p.key(), "a/b/c.txt");
    }

    #[test]
    fn markers_and_odd_but_valid_characters() {
        let p = ObjectPath::parse("dir/sub/").unwrap();
        assert!(p.is_dir());
        assert_eq!(p.key(), "dir/sub/");
        for k in [
            "m@1@0@abc@bf16",
            "100%",
            "with space",
            "ünï/cødé",
            "...",
            "a..b",
            ".hidden",
            "-",
        ] {
            assert_eq!(ObjectPath::parse(k).unwrap().key(), k, "{k}");
        }
    }

    #[test]
    fn unmappable_keys_are_rejected() {
        let cases = [
            ("", KeyError::Empty),
            ("/abs", KeyError::EmptySegment),
            ("a//b", KeyError::EmptySegment),
            ("/", KeyError::EmptySegment),
            ("a/../b", KeyError::DotSegment),
            ("..", KeyError::DotSegment),
            ("./a", KeyError::DotSegment),
            ("a/.", KeyError::DotSegment),
            ("a\0b", KeyError::Nul),
            (".penstock/tmp/x", KeyError::Reserved),
            (".penstock", KeyError::Reserved),
            (".penstock/", KeyError::Reserved),
        ];
        for (k, e) in cases {
            assert_eq!(ObjectPath::parse(k), Err(e), "{k:?}");
        }
        assert_eq!(ObjectPath::parse(&"x".repeat(256)), Err(KeyError::SegmentTooLong));
        assert!(ObjectPath::parse(&"x".repeat(255)).is_ok());
        let long = vec!["y".repeat(200); 21].join("/");
        assert_eq!(ObjectPath::parse(&long), Err(KeyError::TooLong));
    }
}
