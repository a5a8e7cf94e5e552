//! No host synchronisation outside `bitsparse::host::sync`.
//!
//! * `no_host_sync_source_scan`: no Rust file of the workspace (the core's `src/` and every member's
//!   sources: `cli/`, `files/`, `benches/`, `demos/`) other than `src/host/sync.rs` calls `submit`, `poll`,
//!   `map_async` or `map_buffer_on_submit` (comments and string literals are stripped first, and so is
//!   whitespace, so `queue\n    .submit (` is still found).
//! * `no_host_sync_codec_recording`: recording a compress and a decompress into an encoder does not move
//!   the calling thread's counter `bitsparse::host::sync::thread_host_syncs()`.
//! * `no_host_sync_core_spawns_no_threads`: the core's sources start no thread, so every host
//!   synchronisation a call performs is counted on the caller's thread. That makes the per-thread count
//!   exact, and tests that submit on other threads of this binary at the same time cannot disturb it
//!   (the process-wide `host_syncs()` would need a binary of its own, one GPU test in it).

use std::path::{Path, PathBuf};

use bitsparse::host::context::GpuContext;
use bitsparse::host::sync;
use bitsparse::{cpu, BufferRange, Codec, DType, Options};
use wgpu::util::DeviceExt;

use crate::common::harness::{cpu_test, vulkan_test, Test};

pub fn tests() -> Vec<Test> {
    vec![
        cpu_test!(no_host_sync_scanner_self_check),
        cpu_test!(no_host_sync_source_scan),
        cpu_test!(no_host_sync_core_spawns_no_threads),
        vulkan_test!(no_host_sync_codec_recording),
    ]
}

/// Calls that synchronise with the device (after whitespace removal).
const FORBIDDEN: [&str; 6] =
    [".submit(", ".poll(", "map_async", "map_buffer_on_submit", "Queue::submit", "Device::poll"];

/// `src` with comments removed and string / char literals emptied; lifetimes are kept.
fn strip_comments_and_strings(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if (c[i] == 'r' || (c[i] == 'b' && at(i + 1) == 'r'))
            && !(i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
            && {
                let mut k = i + if c[i] == 'b' { 2 } else { 1 };
                while at(k) == '#' {
                    k += 1;
                }
                at(k) == '"'
            }
        {
            // Raw string r#"..."#.
            let mut k = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while at(k) == '#' {
                hashes += 1;
                k += 1;
            }
            k += 1; // opening quote
            loop {
                if k >= c.len() {
                    break;
                }
                if c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#') {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            out.push_str("\"\"");
            i = k;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                let mut k = i + 2;
                while k < c.len() && c[k] != '\'' {
                    k += 1;
                }
                i = k + 1;
                out.push_str("' '");
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The forbidden calls found in `src` (a Rust source text).
fn host_sync_calls(src: &str) -> Vec<&'static str> {
    let code: String = strip_comments_and_strings(src).chars().filter(|c| !c.is_whitespace()).collect();
    FORBIDDEN.iter().copied().filter(|p| code.contains(p)).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for e in rd {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The scanner finds what it must and ignores comments and strings (so the real scan can fail).
fn no_host_sync_scanner_self_check() {
    let found = [
        "fn f(q: &wgpu::Queue) { q.submit([]); }",
        "fn f(q: &wgpu::Queue) { q\n    .submit (\n [] ); }",
        "fn f(d: &wgpu::Device) { let _ = d.poll(wgpu::PollType::Poll); }",
        "fn f(s: wgpu::BufferSlice) { s.map_async(wgpu::MapMode::Read, |_| {}); }",
        "fn f(e: &mut wgpu::CommandEncoder, b: &wgpu::Buffer) { e.map_buffer_on_submit(b, wgpu::MapMode::Read, .., |_| {}); }",
        "fn f(q: &wgpu::Queue) { wgpu::Queue::submit(q, []); }",
        "fn f<'a>(q: &'a wgpu::Queue) { let c = '/'; q.submit([]); }",
        "fn f(q: &wgpu::Queue) { let s = \"//\"; q.submit([]); }",
        "fn f(q: &wgpu::Queue) { let s = r#\"a \" b\"#; /* x /* y */ z */ q.submit([]); }",
    ];
    for src in found {
        assert!(!host_sync_calls(src).is_empty(), "scanner missed a host sync in: {src}");
    }
    let clean = [
        "// q.submit([]);\nfn f() {}",
        "/* d.poll(x) */ fn f() {}",
        "/* outer /* s.map_async(..) */ still comment q.submit() */ fn f() {}",
        "/// Calls `queue.submit(..)` through sync.\nfn f(q: &wgpu::Queue) { bitsparse::host::sync::submit(q, []); }",
        "fn f() { let s = \"never .submit( here\"; let t = r#\"map_async\"#; }",
        "fn f(s: &wgpu::BufferSlice) { bitsparse::host::sync::map_read_async(s, |_| {}); }",
    ];
    for src in clean {
        assert_eq!(host_sync_calls(src), Vec::<&str>::new(), "scanner flagged clean code: {src}");
    }
}

fn no_host_sync_source_scan() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src_dir = root.join("src");
    let mut files = Vec::new();
    rust_files(&src_dir, &mut files);
    assert!(files.len() > 5, "found only {} .rs files under {}", files.len(), src_dir.display());
    // The other members' sources too (their tests excluded: tests may wait on the GPU as they like).
    for member in ["cli/src", "files/src", "benches/src", "benches/codec.rs", "burn/src", "demos"] {
        let p = root.join(member);
        assert!(p.exists(), "{} is missing: is the scan's member list stale?", p.display());
        if p.is_dir() {
            let mut more = Vec::new();
            rust_files(&p, &mut more);
            let tests = [root.join("demos/tests"), root.join("demos/burn_gpt/tests")];
            files.extend(more.into_iter().filter(|f| !tests.iter().any(|t| f.starts_with(t))));
        } else {
            files.push(p);
        }
    }
    let sync_rs = src_dir.join("host/sync.rs");
    assert!(files.contains(&sync_rs), "src/host/sync.rs (the choke point) is missing");
    // The choke point itself must contain what the others must not (else the scan looks for the wrong words).
    let sync_src = std::fs::read_to_string(&sync_rs).expect("read src/host/sync.rs");
    assert!(
        host_sync_calls(&sync_src).len() >= 3,
        "src/host/sync.rs does not call submit/poll/map_async: is the scanner stale?"
    );
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| **f != sync_rs) {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        let found = host_sync_calls(&text);
        if !found.is_empty() {
            offenders.push(format!("{}: {found:?}", f.strip_prefix(root).unwrap_or(f).display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "host synchronisation outside src/host/sync.rs (route it through bitsparse::host::sync):\n{}",
        offenders.join("\n")
    );
}

/// Calls that start a thread (after whitespace removal).
const THREAD_STARTS: [&str; 4] = ["thread::spawn(", "thread::scope(", "Builder::new()", ".spawn("];

/// The per-thread host-sync count is exact only if the library synchronises on the caller's thread: no
/// file of the core starts a thread (the scanner is the one above, so comments and strings do not count).
fn no_host_sync_core_spawns_no_threads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 5, "found only {} .rs files under src/", files.len());
    let starts = |src: &str| -> Vec<&'static str> {
        let code: String = strip_comments_and_strings(src).chars().filter(|c| !c.is_whitespace()).collect();
        THREAD_STARTS.iter().copied().filter(|p| code.contains(p)).collect()
    };
    assert_eq!(starts("fn f() { std::thread::spawn(|| {}); }"), ["thread::spawn("], "scanner self-check");
    assert!(starts("fn f() { /* std::thread::spawn */ let s = \"thread::scope(\"; }").is_empty(), "scanner self-check");
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        let found = starts(&text);
        if !found.is_empty() {
            offenders.push(format!("{}: {found:?}", f.strip_prefix(root).unwrap_or(f).display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "the core starts threads, so thread_host_syncs() may miss syncs (count on the process-wide counter in a \
         binary of its own instead):\n{}",
        offenders.join("\n")
    );
}

/// Recording compress + decompress only records: the counter does not move. Submitting and reading back
/// afterwards does move it (so the counter works) and the round trip is exact (so something was recorded).
fn no_host_sync_codec_recording(ctx: GpuContext) {
    let (device, queue) = (&ctx.device, &ctx.queue);
    let codec = Codec::new(device).expect("codec");
    let dtype = DType::Bf16;
    let n = 3 * 4096 + 123;
    let data = cpu::synthetic_relu2(n, 0.176, dtype, 1);
    let mut padded = data.clone();
    padded.resize(data.len().next_multiple_of(4), 0);
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test.input"),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let cap = codec.output_capacity(dtype, n as u64, Options::SIGN_PACK).expect("capacity");
    let stream = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.stream"),
        size: cap.next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.output"),
        size: padded.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });

    let before = sync::thread_host_syncs();
    let process_before = sync::host_syncs();
    let mut enc = device.create_command_encoder(&Default::default());
    // Two rounds on the same encoder (the second reuses the pipelines and the scan buffer).
    for _ in 0..2 {
        let c = codec
            .compress(
                &mut enc,
                BufferRange::new(&input, 0, data.len() as u64),
                dtype,
                n as u64,
                Options::SIGN_PACK,
                BufferRange::new(&stream, 0, cap),
            )
            .expect("compress");
        codec.decompress(&mut enc, &c, BufferRange::new(&output, 0, data.len() as u64)).expect("decompress");
    }
    let cmd = enc.finish();
    assert_eq!(sync::thread_host_syncs(), before, "recording compress/decompress performed a host synchronisation");

    sync::submit(queue, [cmd]);
    let back = sync::read_buffer(device, queue, &output, 0, data.len() as u64).expect("read back");
    let counted = sync::thread_host_syncs() - before;
    assert!(counted > 0, "submit/read_buffer were not counted: the counter proves nothing");
    assert!(sync::host_syncs() >= process_before + counted, "the process-wide counter missed this thread's syncs");
    assert!(back == data, "round trip of the recorded commands is not exact");
}
