//! Backend.AI virtual-folder identities and their on-volume layout.
//!
//! A folder lives at `<volume root>/<scope uuid hex>/<id[0:2]>/<id[2:4]>/<id[4:]>`, UUIDs written
//! as 32 lowercase hex digits. The scope's kind is not part of the path. This is the only place the
//! layout is computed, so folders made through S3 and folders mounted into sessions always agree.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use uuid::Uuid;

/// Whether a quota scope belongs to a user or to a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScopeKind {
    User,
    Project,
}

/// A quota scope, written `user:<uuid>` or `project:<uuid>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
}

impl fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ScopeKind::User => "user",
            ScopeKind::Project => "project",
        };
        write!(f, "{kind}:{}", self.id)
    }
}

/// A quota scope string that is not `user:<uuid>` or `project:<uuid>`.
#[derive(Debug, thiserror::Error)]
#[error("invalid quota scope {0:?}: expected user:<uuid> or project:<uuid>")]
pub struct ParseScopeError(String);

impl FromStr for QuotaScope {
    type Err = ParseScopeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseScopeError(s.to_owned());
        let (kind, id) = s.split_once(':').ok_or_else(err)?;
        let kind = match kind {
            "user" => ScopeKind::User,
            "project" => ScopeKind::Project,
            _ => return Err(err()),
        };
        let id = Uuid::parse_str(id).map_err(|_| err())?;
        Ok(Self { kind, id })
    }
}

/// Where a folder lives on its volume: its quota scope and its folder id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FolderLocation {
    pub scope: QuotaScope,
    pub id: Uuid,
}

impl FolderLocation {
    /// The folder's directory relative to the volume root.
    pub fn relative_path(&self) -> PathBuf {
        let id = self.id.simple().to_string();
        let mut p = PathBuf::from(self.scope.id.simple().to_string());
        p.push(&id[0..2]);
        p.push(&id[2..4]);
        p.push(&id[4..]);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_backend_ai() {
        let loc = FolderLocation {
            scope: "user:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".parse().unwrap(),
            id: Uuid::parse_str("12345678-9abc-def0-1234-56789abcdef0").unwrap(),
        };
        assert_eq!(
            loc.relative_path(),
            PathBuf::from("0f1e2d3c4b5a69788796a5b4c3d2e1f0/12/34/56789abcdef0123456789abcdef0")
        );
    }

    #[test]
    fn scopes_round_trip() {
        for s in [
            "user:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "project:00000000-0000-0000-0000-000000000001",
        ] {
            assert_eq!(s.parse::<QuotaScope>().unwrap().to_string(), s);
        }
        assert!("group:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
            .parse::<QuotaScope>()
            .is_err());
        assert!("user:nope".parse::<QuotaScope>().is_err());
    }
}
