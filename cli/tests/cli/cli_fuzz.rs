//! Damaged files through the binary: the fuzzing corpus (`files/tests/corpus/`) and mutated containers
//! with recomputed CRCs (`files/tests/mutants/`): never a panic, a wrong output or a partial file.

use crate::common::harness::{cpu_test, needs_test, Test, VULKAN};
use crate::mutants::*;

pub fn tests() -> Vec<Test> {
    vec![
        needs_test!(mutated_containers_through_the_cli, VULKAN),
        cpu_test!(corpus_through_the_cli),
        needs_test!(corpus_ok_files_through_the_cli, VULKAN),
    ]
}

/// Mutated containers with recomputed CRCs through the binary (GPU decoder): a spec-valid mutant
/// decompresses to exactly what the CPU reference decodes, a spec-invalid one is exit 1 with one
/// `error:` line naming the file and leaves no output. Deterministic mutants, enough of them that both
/// kinds occur (the test counts them).
fn mutated_containers_through_the_cli() {
    let bin = env!("CARGO_BIN_EXE_bitsparse");
    let tmp = std::env::temp_dir().join(format!("bitsparse-fuzz-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let seeds = container_seeds();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize
    };
    let (mut valid, mut invalid) = (0, 0);
    for case in 0..48 {
        let seed = &seeds[case % seeds.len()];
        // Mostly one or two byte edits (many land in values and stay spec-valid), sometimes a cut.
        let edits: Vec<(usize, u8)> = (0..1 + next() % 2).map(|_| (next(), next() as u8)).collect();
        let cut = (case % 7 == 3).then(&mut next);
        let m = recompute_crcs(mutate(seed.clone(), &edits, &None, cut));
        let (inp, out) = (tmp.join(format!("m{case}.bsp")), tmp.join(format!("m{case}.out")));
        std::fs::write(&inp, &m).unwrap();
        let mut c = std::process::Command::new(bin);
        c.env_remove("WGPU_ADAPTER_NAME").env_remove("WGPU_BACKEND");
        let o = c.args(["--backend", "vulkan", "decompress"]).arg(&inp).arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked") && !err.contains("internal"), "case {case}: {err}");
        match judge(&m) {
            Ok(decoded) => {
                valid += 1;
                assert_eq!(o.status.code(), Some(0), "case {case}: spec-valid mutant refused: {err}");
                assert!(std::fs::read(&out).unwrap() == decoded, "case {case}: GPU and CPU decode differ");
            }
            Err(why) => {
                invalid += 1;
                assert_eq!(o.status.code(), Some(1), "case {case} ({why}): {err}");
                assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "case {case}: {err}");
                assert!(err.contains(&format!("m{case}.bsp")), "case {case}: error does not name the file: {err}");
                assert!(!out.exists(), "case {case}: output left behind");
            }
        }
    }
    assert!(valid >= 5 && invalid >= 5, "too one-sided to test both rules: {valid} valid, {invalid} invalid");
    eprintln!("{valid} spec-valid and {invalid} spec-invalid mutants");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The corpus through the binary, its `bad-*` files: one `error: ` line and exit 1 (never a panic, never
/// an output file), from analyze / decompress and from compress. Most are refused before any adapter is
/// opened, so this runs without one.
fn corpus_through_the_cli() {
    corpus(false);
}

/// The corpus's good files (every file not named `bad-*`): they analyse and round-trip byte-exactly
/// through compress / decompress on the GPU (the part of `corpus_through_the_cli` that ran only when
/// Vulkan was there: now a test of its own, ignored without it).
fn corpus_ok_files_through_the_cli() {
    corpus(true);
}

/// Runs the corpus files that are good (`good`) or bad through the binary.
fn corpus(good: bool) {
    let bin = env!("CARGO_BIN_EXE_bitsparse");
    let tmp = std::env::temp_dir().join(format!("bitsparse-corpus-cli-{}-{good}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let mut c = std::process::Command::new(bin);
        c.env_remove("WGPU_ADAPTER_NAME").env_remove("WGPU_BACKEND");
        if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
            c.env("XDG_RUNTIME_DIR", "/tmp");
        }
        c.arg("--backend").arg("vulkan").args(args).output().unwrap()
    };
    let mut files = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_string();
        if ext == "md" || name.starts_with("bad-") == good {
            continue;
        }
        files += 1;
        let out = tmp.join("out");
        let back = tmp.join("back");
        let _ = std::fs::remove_file(&out);
        let o = if ext == "bsp" {
            run(&["decompress".as_ref(), path.as_os_str(), out.as_os_str()])
        } else {
            run(&["analyze".as_ref(), path.as_os_str()])
        };
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked") && !err.contains("internal"), "{name}: {err}");
        if !good {
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{name}: {err}");
            assert!(err.contains(&name), "{name}: error does not name the file: {err}");
            assert!(!out.exists(), "{name}: output written");
            if ext != "bsp" {
                let o = run(&["compress".as_ref(), path.as_os_str(), out.as_os_str()]);
                assert_eq!(o.status.code(), Some(1), "{name}: compress accepted a bad file");
                assert!(!out.exists(), "{name}: output written");
            }
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        if ext != "bsp" {
            assert_eq!(run(&["compress".as_ref(), path.as_os_str(), out.as_os_str()]).status.code(), Some(0), "{name}");
            assert_eq!(
                run(&["decompress".as_ref(), out.as_os_str(), back.as_os_str()]).status.code(),
                Some(0),
                "{name}"
            );
            assert!(std::fs::read(&back).unwrap() == std::fs::read(&path).unwrap(), "{name}: round trip differs");
        }
    }
    assert!(files > 0, "no {} files in {}", if good { "good" } else { "bad" }, corpus_dir().display());
    let _ = std::fs::remove_dir_all(&tmp);
}
