//! How the `bitsparse` binary reads and writes what users pipe into it: every input read exactly once
//! (pipes, `/dev/stdin`, FIFOs, `-`), special outputs written through and never replaced, OUT = IN
//! refused, `--dtype` winning over content sniffing, long OUT names, interrupted runs, driver noise on
//! stderr. Unix only (FIFOs, symbolic links, signals).
#![cfg(unix)]

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common;
use crate::common::cli::{assert_error, assert_ok, command as cmd, s, stderr};
use crate::common::harness::{cpu_test, needs_test, Test, VULKAN};

pub fn tests() -> Vec<Test> {
    vec![
        needs_test!(piped_input_through_dev_stdin_and_dash_keeps_every_byte, VULKAN),
        needs_test!(fifo_input_is_read_once, VULKAN),
        needs_test!(dash_output_streams_to_stdout, VULKAN),
        needs_test!(closed_stdout_is_one_error_line, VULKAN),
        needs_test!(special_outputs_are_written_through, VULKAN),
        cpu_test!(out_that_is_in_is_refused),
        needs_test!(dtype_wins_over_the_npy_magic, VULKAN),
        needs_test!(longest_output_name_works, VULKAN),
        needs_test!(interrupted_run_leaves_no_temporary_file, VULKAN),
        needs_test!(driver_noise_does_not_break_the_error_line_contract, VULKAN),
    ]
}

fn scratch(name: &str) -> PathBuf {
    common::cli::scratch("cli-io", name)
}

fn run(args: &[&str]) -> Output {
    cmd().args(args).output().expect("spawn bitsparse")
}

/// Runs the binary with `stdin` piped in (written from a thread, so a large input cannot deadlock).
fn run_piped(args: &[&str], stdin: &[u8]) -> Output {
    let mut child =
        cmd().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// 3,000 BF16 elements (6,000 bytes, as in the bug report), about a fifth nonzero and positive.
fn data() -> Vec<u8> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut v = vec![0u8; 6000];
    for e in v.chunks_exact_mut(2) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 5 == 0 {
            e.copy_from_slice(&(((x >> 20) as u16 & 0x7fff) | 0x0080).to_le_bytes());
        }
    }
    v
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(st.success());
}

/// Decompresses `bsp` to a fresh file and returns its bytes.
fn restore(d: &Path, bsp: &Path) -> Vec<u8> {
    let back = d.join("restored.raw");
    let _ = std::fs::remove_file(&back);
    assert_ok(&run(&["decompress", s(bsp), s(&back)]), "decompress");
    std::fs::read(&back).unwrap()
}

/// The bug: `cat in.raw | bitsparse compress --dtype bf16 /dev/stdin out.bsp` lost the first 16 bytes.
fn piped_input_through_dev_stdin_and_dash_keeps_every_byte() {
    let d = scratch("stdin");
    let raw = data();
    for input in ["/dev/stdin", "-"] {
        let bsp = d.join("out.bsp");
        let o = run_piped(&["compress", "--dtype", "bf16", input, s(&bsp)], &raw);
        assert_ok(&o, input);
        assert_eq!(restore(&d, &bsp), raw, "{input}: restored bytes differ");
    }
    // Decompress from a pipe too, and analyze.
    let bsp = d.join("out.bsp");
    let o = run_piped(&["decompress", "-", s(&d.join("p.raw"))], &std::fs::read(&bsp).unwrap());
    assert_ok(&o, "decompress -");
    assert_eq!(std::fs::read(d.join("p.raw")).unwrap(), raw);
    let o = run_piped(&["analyze", "--json", "--dtype", "bf16", "-"], &raw);
    assert_ok(&o, "analyze -");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["tensors"][0]["elements"], 3000, "{v}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A FIFO input used to hang or lose bytes (two opens racing the writer).
fn fifo_input_is_read_once() {
    let d = scratch("fifo-in");
    let raw = data();
    let fifo = d.join("in.fifo");
    mkfifo(&fifo);
    let (f2, r2) = (fifo.clone(), raw.clone());
    let writer = std::thread::spawn(move || std::fs::write(&f2, &r2).unwrap());
    let bsp = d.join("out.bsp");
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&fifo), s(&bsp)]), "compress FIFO");
    writer.join().unwrap();
    assert_eq!(restore(&d, &bsp), raw);
    let _ = std::fs::remove_dir_all(&d);
}

/// `… compress … - -` and `decompress in.bsp - | consumer`: stdout carries only the data; the summary
/// line moves to stderr; `--json` (which owns stdout) is refused with OUT `-`.
fn dash_output_streams_to_stdout() {
    let d = scratch("stdout");
    let raw = data();
    let o = run_piped(&["compress", "--dtype", "bf16", "-", "-"], &raw);
    assert_ok(&o, "compress - -");
    assert!(stderr(&o).contains("ratio"), "summary on stderr: {}", stderr(&o));
    let bsp = d.join("piped.bsp");
    std::fs::write(&bsp, &o.stdout).unwrap();
    assert_eq!(restore(&d, &bsp), raw);
    let o = run(&["decompress", s(&bsp), "-"]);
    assert_ok(&o, "decompress -");
    assert!(o.stdout == raw, "stdout is exactly the restored bytes");
    assert!(!stderr(&o).contains("error"), "{}", stderr(&o));
    let o = run(&["decompress", "--json", s(&bsp), "-"]);
    assert_eq!(o.status.code(), Some(2), "--json with OUT `-` is a usage error: {}", stderr(&o));
    assert!(o.stdout.is_empty());
    // A corrupt container writes nothing to stdout: every record is decoded before the first byte.
    let mut bad = std::fs::read(&bsp).unwrap();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    std::fs::write(d.join("bad.bsp"), &bad).unwrap();
    let o = run(&["decompress", s(&d.join("bad.bsp")), "-"]);
    assert_error(&o, &["bad.bsp"], "corrupt container to stdout");
    assert!(o.stdout.is_empty(), "nothing written to stdout on failure");
    let _ = std::fs::remove_dir_all(&d);
}

/// A reader that closes the pipe early: exit 1 with one `error:` line, no panic (SIGPIPE is ignored by
/// Rust programs, so the write fails with EPIPE).
fn closed_stdout_is_one_error_line() {
    let d = scratch("epipe");
    let raw = vec![0x3fu8; 1 << 20];
    let inp = d.join("a.raw");
    std::fs::write(&inp, &raw).unwrap();
    let bsp = d.join("a.bsp");
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&inp), s(&bsp)]), "compress");
    let mut child =
        cmd().args(["decompress", s(&bsp), "-"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_error(&o, &["-", "cannot write"], "closed stdout");
    let _ = std::fs::remove_dir_all(&d);
}

/// `/dev/null`, a FIFO and symbolic links as OUT are written through; the special file stays what it
/// was. A link to a regular file has its target replaced and stays a link.
fn special_outputs_are_written_through() {
    let d = scratch("special");
    let raw = data();
    let inp = d.join("a.raw");
    std::fs::write(&inp, &raw).unwrap();
    let bsp = d.join("a.bsp");
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&inp), s(&bsp)]), "compress");

    // A character device stays a character device (as root, `/dev/null` used to be replaced by a regular
    // file). Root makes its own null device node in the scratch directory, so a regression cannot
    // break the machine's `/dev/null`; other users cannot replace `/dev/null` anyway and use it.
    use std::os::unix::fs::FileTypeExt;
    let own = d.join("null");
    let made = std::process::Command::new("mknod").args([s(&own), "c", "1", "3"]).stderr(Stdio::null()).status();
    let null = if made.map(|s| s.success()).unwrap_or(false) { own } else { PathBuf::from("/dev/null") };
    let before = std::fs::metadata(&null).unwrap();
    assert_ok(&run(&["decompress", s(&bsp), s(&null)]), "to a null device");
    let after = std::fs::symlink_metadata(&null).unwrap();
    assert!(after.file_type().is_char_device(), "{}: replaced by a regular file", null.display());
    assert_eq!((before.ino(), before.rdev()), (after.ino(), after.rdev()), "{} replaced", null.display());
    let _ = std::fs::remove_file(d.join("null"));

    // A FIFO: the reader gets the bytes; the FIFO is still a FIFO.
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(&f2).unwrap());
    assert_ok(&run(&["decompress", s(&bsp), s(&fifo)]), "to FIFO");
    assert_eq!(reader.join().unwrap(), raw);
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    // A symbolic link to a regular file (relative target, and a chain of two links).
    std::fs::write(d.join("target.raw"), b"old").unwrap();
    std::os::unix::fs::symlink("target.raw", d.join("link1")).unwrap();
    std::os::unix::fs::symlink(d.join("link1"), d.join("link2")).unwrap();
    assert_ok(&run(&["decompress", s(&bsp), s(&d.join("link2"))]), "to link");
    assert!(std::fs::symlink_metadata(d.join("link2")).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(d.join("link1")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(d.join("target.raw")).unwrap(), raw);
    // A dangling link: its target is created.
    std::os::unix::fs::symlink("new.raw", d.join("dangling")).unwrap();
    assert_ok(&run(&["decompress", s(&bsp), s(&d.join("dangling"))]), "to dangling link");
    assert!(std::fs::symlink_metadata(d.join("dangling")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(d.join("new.raw")).unwrap(), raw);
    // /dev/stdout is a link too (to the process's stdout): written through.
    let o = run(&["decompress", s(&bsp), "/dev/stdout"]);
    assert_ok(&o, "to /dev/stdout");
    assert!(o.stdout == raw, "/dev/stdout carries exactly the restored bytes ({} bytes)", o.stdout.len());
    assert!(stderr(&o).contains("restored"), "summary on stderr: {}", stderr(&o));
    assert!(listing(&d).iter().all(|n| !n.starts_with(".bitsparse-tmp")), "{:?}", listing(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// OUT naming the same file as IN — same path, another path, a hard link, a symbolic link — is a
/// usage error (exit 2, one `error:` line) and the input stays as it was. Needs no GPU: refused first.
fn out_that_is_in_is_refused() {
    let d = scratch("same");
    let raw = data();
    let inp = d.join("a.raw");
    std::fs::write(&inp, &raw).unwrap();
    std::fs::hard_link(&inp, d.join("hard.raw")).unwrap();
    std::os::unix::fs::symlink(&inp, d.join("soft.raw")).unwrap();
    let dotted = d.join(".").join("a.raw");
    for out in [inp.clone(), dotted, d.join("hard.raw"), d.join("soft.raw")] {
        for sub in
            [&["compress", "--dtype", "bf16"][..], &["decompress"][..], &["compress", "--json", "--dtype", "bf16"][..]]
        {
            let mut args = sub.to_vec();
            args.extend([s(&inp), s(&out)]);
            let o = run(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{err}");
            assert!(err.contains("same file"), "{err}");
            assert_eq!(std::fs::read(&inp).unwrap(), raw, "input touched");
        }
    }
    assert_eq!(listing(&d), ["a.raw", "hard.raw", "soft.raw"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// A raw BF16 file whose first bytes are the npy magic is raw when `--dtype` is given.
fn dtype_wins_over_the_npy_magic() {
    let d = scratch("magic");
    let mut raw = b"\x93NUMPY\x01\x00".to_vec();
    raw.extend(data());
    let inp = d.join("looks-like.raw");
    std::fs::write(&inp, &raw).unwrap();
    let bsp = d.join("o.bsp");
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&inp), s(&bsp)]), "compress");
    assert_eq!(restore(&d, &bsp), raw);
    let o = run(&["analyze", "--json", "--dtype", "bf16", s(&inp)]);
    assert_ok(&o, "analyze");
    // Without --dtype the content decides: a broken .npy, refused.
    let o = run(&["compress", s(&inp), s(&bsp)]);
    assert_error(&o, &["looks-like.raw"], "no --dtype");
    let _ = std::fs::remove_dir_all(&d);
}

/// An OUT name of 255 bytes (the usual NAME_MAX): the temporary name must not be longer.
fn longest_output_name_works() {
    let d = scratch("long");
    let raw = data();
    let inp = d.join("a.raw");
    std::fs::write(&inp, &raw).unwrap();
    let long = d.join(format!("{}.bsp", "n".repeat(251)));
    assert_eq!(long.file_name().unwrap().len(), 255);
    assert_ok(&run(&["compress", "--dtype", "bf16", s(&inp), s(&long)]), "255-byte name");
    let back = d.join(format!("{}.raw", "r".repeat(251)));
    assert_ok(&run(&["decompress", s(&long), s(&back)]), "255-byte name back");
    assert_eq!(std::fs::read(&back).unwrap(), raw);
    assert_eq!(listing(&d).len(), 3, "{:?}", listing(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// SIGTERM / SIGINT while the temporary output file exists (between opening OUT and the rename: the
/// adapter is opened and the GPU work runs in that window, hundreds of milliseconds on lavapipe for
/// 8 MiB): the file is removed, OUT is not created, the exit code is 128 + the signal.
fn interrupted_run_leaves_no_temporary_file() {
    let d = scratch("signal");
    let inp = d.join("big.raw");
    std::fs::write(&inp, data().repeat(1400)).unwrap();
    for (sig, name) in [(15, "TERM"), (2, "INT")] {
        let out = d.join(format!("out-{name}.bsp"));
        let mut child = cmd()
            .args(["compress", "--dtype", "bf16", "--verify", s(&inp), s(&out)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        let mut seen = false;
        while t0.elapsed() < std::time::Duration::from_secs(60) && child.try_wait().unwrap().is_none() {
            if listing(&d).iter().any(|n| n.starts_with(".bitsparse-tmp")) {
                seen = true;
                let st =
                    std::process::Command::new("kill").args([&format!("-{sig}"), &child.id().to_string()]).status();
                assert!(st.unwrap().success());
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        let o = child.wait_with_output().unwrap();
        assert!(seen, "SIG{name}: the run ended before its temporary file was seen: {}", stderr(&o));
        assert_eq!(o.status.code(), Some(128 + sig), "SIG{name}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().filter(|l| l.starts_with("error:")).count(), 1, "{}", stderr(&o));
        assert!(!out.exists(), "SIG{name}: OUT created");
        assert_eq!(listing(&d), ["big.raw"], "SIG{name}: temporary file left");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Mesa prints its own `error: XDG_RUNTIME_DIR …` when that variable is unset; the CLI sets it, so a
/// success prints no `error:` line and a failure exactly one, its own.
fn driver_noise_does_not_break_the_error_line_contract() {
    let d = scratch("xdg");
    let inp = d.join("a.raw");
    std::fs::write(&inp, data()).unwrap();
    let o = cmd()
        .env_remove("XDG_RUNTIME_DIR")
        .args(["compress", "--dtype", "bf16", s(&inp), s(&d.join("a.bsp"))])
        .output()
        .unwrap();
    assert_ok(&o, "success without XDG_RUNTIME_DIR");
    assert!(!stderr(&o).contains("error"), "{}", stderr(&o));
    std::fs::write(&inp, [1u8, 2, 3]).unwrap();
    let o = cmd()
        .env_remove("XDG_RUNTIME_DIR")
        .args(["compress", "--dtype", "bf16", s(&inp), s(&d.join("b.bsp"))])
        .output()
        .unwrap();
    assert_error(&o, &["a.raw"], "failure without XDG_RUNTIME_DIR");
    let o = cmd().env_remove("XDG_RUNTIME_DIR").args(["info"]).output().unwrap();
    assert_ok(&o, "info without XDG_RUNTIME_DIR");
    assert!(!stderr(&o).contains("error"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}
