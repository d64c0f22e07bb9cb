//! The shared vocabulary of Penstock.
//!
//! Tenancy and object values cross every crate: the gateway parses them from requests and the
//! admin API, the metadata store keeps them in records, the backends lay folders out by them.
//! Each is a type here, validated once where it enters (parse or deserialize), so no crate splits
//! or compares strings by hand. Every type serializes as the string S3 or Backend.AI spells it,
//! which is also how the records stored them before they were typed.
//!
//! This crate depends on nothing heavier than `serde`, `uuid` and `thiserror`, so every other crate
//! may use it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A value that is not one of a type's spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {given:?}: expected {expected}")]
pub struct ParseError {
    what: &'static str,
    given: String,
    expected: String,
}

impl ParseError {
    fn new(what: &'static str, given: &str, expected: impl Into<String>) -> Self {
        Self {
            what,
            given: given.chars().take(80).collect(),
            expected: expected.into(),
        }
    }
}

/// Serializes a type as its `Display` string and deserializes it through `FromStr`, so a
/// malformed value in a record or a request body is refused where it is read.
macro_rules! string_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Implements `Display`, `FromStr` and string serde for an enum spelled by a fixed table.
macro_rules! spelled {
    ($ty:ident, $what:literal, [$($variant:ident => $s:literal),+ $(,)?]) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: [$ty; [$($s),+].len()] = [$($ty::$variant),+];

            /// The value's spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $s),+ }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = ParseError;

            fn from_str(s: &str) -> Result<Self, ParseError> {
                match s {
                    $($s => Ok($ty::$variant),)+
                    _ => Err(ParseError::new($what, s, format!("one of {}", [$($s),+].join(", ")))),
                }
            }
        }

        string_serde!($ty);
    };
}

/// Whether a quota scope belongs to a user or to a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeKind {
    User,
    Project,
}

spelled!(ScopeKind, "scope kind", [User => "user", Project => "project"]);

/// A quota scope, written `user:<uuid>` or `project:<uuid>`: who owns a folder and is charged
/// for its bytes. Its id (32 hex digits) is the first level of the folder's path on its volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaScope {
    pub kind: ScopeKind,
    pub id: Uuid,
}

impl QuotaScope {
    /// The scope of a user's own folders.
    pub fn user(id: Uuid) -> Self {
        Self {
            kind: ScopeKind::User,
            id,
        }
    }

    /// The scope of a project's folders.
    pub fn project(id: Uuid) -> Self {
        Self {
            kind: ScopeKind::Project,
            id,
        }
    }
}

impl fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)
    }
}

impl FromStr for QuotaScope {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let err = || ParseError::new("quota scope", s, "user:<uuid> or project:<uuid>");
        let (kind, id) = s.split_once(':').ok_or_else(err)?;
        let kind = kind.parse().map_err(|_| err())?;
        let id = Uuid::parse_str(id).map_err(|_| err())?;
        Ok(Self { kind, id })
    }
}

string_serde!(QuotaScope);

/// A permission on a folder, ordered: `ro` < `rw` < `wd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Perm {
    /// Get, Head, List.
    Ro,
    /// Read plus Put, Copy, multipart, tagging.
    Rw,
    /// Read, write and delete.
    Wd,
}

spelled!(Perm, "permission", [Ro => "ro", Rw => "rw", Wd => "wd"]);

/// What a user may administer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    DomainAdmin,
    Superadmin,
}

spelled!(Role, "role", [User => "user", DomainAdmin => "domain_admin", Superadmin => "superadmin"]);

/// What a folder is for, as Backend.AI labels it; Penstock stores and reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UsageMode {
    #[default]
    General,
    Model,
    Data,
}

spelled!(UsageMode, "usage mode", [General => "general", Model => "model", Data => "data"]);

/// An S3 additional-checksum algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlgorithm {
    Crc32,
    Crc32c,
    Crc64Nvme,
    Sha1,
    Sha256,
}

spelled!(ChecksumAlgorithm, "checksum algorithm", [
    Crc32 => "CRC32",
    Crc32c => "CRC32C",
    Crc64Nvme => "CRC64NVME",
    Sha1 => "SHA1",
    Sha256 => "SHA256",
]);

impl ChecksumAlgorithm {
    /// Parses a name as `x-amz-checksum-algorithm` carries it, in any case (`crc64nvme`).
    pub fn parse_any_case(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|a| a.as_str().eq_ignore_ascii_case(name))
    }

    /// The header that carries a checksum of this algorithm, `x-amz-checksum-crc32` and so on.
    pub const fn header(self) -> &'static str {
        match self {
            Self::Crc32 => "x-amz-checksum-crc32",
            Self::Crc32c => "x-amz-checksum-crc32c",
            Self::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Self::Sha1 => "x-amz-checksum-sha1",
            Self::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// Parses a header name such as `x-amz-checksum-crc32c`, in any case.
    pub fn from_header(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|a| a.header().eq_ignore_ascii_case(name))
    }

    /// CRCs combine into a checksum of the whole object; hashes only into a composite one.
    pub fn is_crc(self) -> bool {
        matches!(self, Self::Crc32 | Self::Crc32c | Self::Crc64Nvme)
    }
}

/// How a multipart object's checksum covers it: of the whole bytes, or of the parts' checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    FullObject,
    Composite,
}

spelled!(ChecksumType, "checksum type", [FullObject => "FULL_OBJECT", Composite => "COMPOSITE"]);

/// A multipart upload's id. It names a directory in the folder's hidden area, so only what the
/// gateway generates is accepted: 1 to 64 ASCII letters, digits and `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UploadId(String);

impl UploadId {
    /// A fresh id: 32 random hex digits.
    pub fn generate() -> Self {
        Self(Uuid::new_v4().simple().to_string())
    }

    /// The id as clients see it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UploadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for UploadId {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let ok = !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !ok {
            return Err(ParseError::new("upload id", s, "1 to 64 letters, digits or '-'"));
        }
        Ok(Self(s.to_owned()))
    }
}

impl From<UploadId> for String {
    fn from(id: UploadId) -> String {
        id.0
    }
}

impl AsRef<str> for UploadId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

string_serde!(UploadId);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelled value parses back from its spelling and serializes as it.
    fn round_trips<T>(all: &[T])
    where
        T: Copy + fmt::Display + FromStr + PartialEq + fmt::Debug + Serialize + for<'de> Deserialize<'de>,
    {
        for &v in all {
            let s = v.to_string();
            assert_eq!(s.parse::<T>().ok(), Some(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<T>(&format!("\"{s}\"")).unwrap(), v);
        }
    }

    #[test]
    fn spellings_round_trip() {
        round_trips(&Perm::ALL);
        round_trips(&Role::ALL);
        round_trips(&UsageMode::ALL);
        round_trips(&ChecksumAlgorithm::ALL);
        round_trips(&ChecksumType::ALL);
        round_trips(&ScopeKind::ALL);
        assert!("RO".parse::<Perm>().is_err());
        assert!(serde_json::from_str::<UsageMode>("\"scratch\"").is_err());
        assert_eq!(
            ChecksumAlgorithm::parse_any_case("crc64nvme"),
            Some(ChecksumAlgorithm::Crc64Nvme)
        );
        assert!(Perm::Ro < Perm::Rw && Perm::Rw < Perm::Wd);
    }

    #[test]
    fn scopes_round_trip() {
        for s in [
            "user:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "project:00000000-0000-0000-0000-000000000001",
        ] {
            let scope: QuotaScope = s.parse().unwrap();
            assert_eq!(scope.to_string(), s);
            assert_eq!(serde_json::to_string(&scope).unwrap(), format!("\"{s}\""));
        }
        for bad in ["group:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "user:nope", "user", ""] {
            assert!(bad.parse::<QuotaScope>().is_err(), "{bad}");
        }
    }

    #[test]
    fn upload_ids_are_checked_once() {
        let id = UploadId::generate();
        assert_eq!(id.as_str().len(), 32);
        assert_eq!(id.as_str().parse::<UploadId>().unwrap(), id);
        for bad in ["", "../x", "a/b", ".penstock", "x".repeat(65).as_str(), "é"] {
            assert!(bad.parse::<UploadId>().is_err(), "{bad:?}");
            assert!(serde_json::from_str::<UploadId>(&format!("{bad:?}")).is_err());
        }
        assert!("A-1".repeat(21).parse::<UploadId>().is_ok());
    }
}
