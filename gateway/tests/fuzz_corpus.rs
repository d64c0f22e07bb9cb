//! Replays every committed fuzz corpus entry (`fuzz/corpus/<target>/`) through the code its
//! target drives, on stable Rust: inputs that once found a panic stay fixed, and the targets
//! stay compiling and meaningful between fuzzing runs (`scripts/fuzz`).

use std::path::Path;

#[test]
fn every_corpus_entry_passes_its_target() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (name, target) in penstock::fuzzing::TARGETS {
        let dir = corpus.join(name);
        let entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert!(!entries.is_empty(), "corpus {} is empty", dir.display());
        for path in entries {
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panicked", path.display());
        }
    }
}
