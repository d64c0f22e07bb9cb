//! Replays every committed fuzz corpus entry (`fuzz/corpus/<target>/`, which `scripts/fuzz`
//! minimizes) and every input that once found a bug (`fuzz/regressions/<target>/`, kept as is)
//! through the code its target drives, on stable Rust: fixed bugs stay fixed, and the targets
//! stay compiling and meaningful between fuzzing runs.

use std::path::Path;

#[test]
fn every_corpus_entry_passes_its_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    for (name, target) in penstock::fuzzing::TARGETS {
        let dir = fuzz.join("corpus").join(name);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert!(entries.len() >= 10, "corpus {} has almost nothing", dir.display());
        if let Ok(found) = std::fs::read_dir(fuzz.join("regressions").join(name)) {
            entries.extend(found.map(|e| e.unwrap().path()));
        }
        for path in entries {
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panicked", path.display());
        }
    }
}
