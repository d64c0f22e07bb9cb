//! Backend.AI virtual-folder identities and their on-volume layout.
//!
//! A folder lives at `<volume root>/<scope uuid hex>/<id[0:2]>/<id[2:4]>/<id[4:]>`, UUIDs written
//! as 32 lowercase hex digits. The scope's kind is not part of the path. This is the only place the
//! layout is computed, so folders made through S3 and folders mounted into sessions always agree.

use std::path::PathBuf;

pub use penstock_types::{QuotaScope, ScopeKind};
use uuid::Uuid;

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
}
