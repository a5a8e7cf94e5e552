//! The test harness of the GPU test binaries (`harness = false` targets on `libtest-mimic`), after wgpu's
//! own test suite: a test that needs an adapter the machine lacks is reported as *ignored*, with the
//! reason, not as passed. With `CI=true` (see [`super::in_ci`]) the same test fails instead: CI must have
//! every backend. An adapter that enumerates but cannot be opened is a failure everywhere.
//!
//! A test binary lists its tests and hands them to [`main`]:
//!
//! ```ignore
//! fn main() {
//!     common::harness::main(vec![cpu_test!(parses_the_header), vulkan_test!(round_trip), gl_test!(gl_round_trip)])
//! }
//! ```
//!
//! `cpu_test!(f)` runs `f()`; `vulkan_test!(f)` / `gl_test!(f)` open a device on that backend and run
//! `f(ctx)`; `needs_test!(f, REQ, ...)` runs `f()` once every [`Requirement`] is met (the CLI tests, which
//! run the binary, need an adapter without opening one). A test is named `module::f` after the module
//! that lists it (the binary's own name left out), so `cargo test --test gpu arena::` selects one file of
//! a merged binary. A function written as a test but not listed is dead code, which `clippy -D warnings`
//! refuses: a test cannot silently drop out of its binary.
//!
//! Everything libtest accepts on the command line works (`--list`, `--exact`, `--skip`, `--ignored`,
//! `--include-ignored`, `--test-threads`; `RUST_TEST_THREADS` too); output is not captured.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use bitsparse::host::context::GpuContext;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Why a requirement is not met.
#[derive(Clone, Debug)]
pub enum Absent {
    /// Nothing of the kind on this machine: the test is ignored (fails under `CI=true`).
    Missing(String),
    /// It is there but does not work (an adapter that cannot be opened): always a failure.
    Broken(String),
}

/// Something a test needs from the machine, probed once per process on first use.
pub struct Requirement {
    /// Short name for the skip message (`Vulkan adapter`).
    pub what: &'static str,
    probe: fn() -> Result<(), Absent>,
    state: OnceLock<Result<(), Absent>>,
    ignored: AtomicUsize,
}

impl Requirement {
    /// A requirement checked by `probe`.
    pub const fn new(what: &'static str, probe: fn() -> Result<(), Absent>) -> Requirement {
        Requirement { what, probe, state: OnceLock::new(), ignored: AtomicUsize::new(0) }
    }

    /// The probe's result (probed on the first call).
    pub fn check(&self) -> &Result<(), Absent> {
        self.state.get_or_init(self.probe)
    }
}

/// A Vulkan adapter that opens (lavapipe here).
pub static VULKAN: Requirement = Requirement::new("a Vulkan adapter", || super::probe(wgpu::Backends::VULKAN));
/// A GL adapter that opens (llvmpipe through EGL here).
pub static GL: Requirement = Requirement::new("a GL adapter", || super::probe(wgpu::Backends::GL));

/// One test: a name, what it needs, and its body.
pub struct Test {
    name: String,
    needs: Vec<&'static Requirement>,
    ignore: Option<&'static str>,
    body: Box<dyn FnOnce() + Send>,
}

/// `module::function` from `module_path!()` (the crate's own name dropped) and the function's name.
pub fn name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}

impl Test {
    /// A test that needs nothing but the CPU.
    pub fn cpu(name: String, f: impl FnOnce() + Send + 'static) -> Test {
        Test { name, needs: Vec::new(), ignore: None, body: Box::new(f) }
    }

    /// A test that runs once every requirement of `needs` is met.
    pub fn needs(name: String, needs: &[&'static Requirement], f: impl FnOnce() + Send + 'static) -> Test {
        Test { name, needs: needs.to_vec(), ignore: None, body: Box::new(f) }
    }

    /// A test given a device on the first Vulkan adapter that opens.
    pub fn vulkan(name: String, f: impl FnOnce(GpuContext) + Send + 'static) -> Test {
        Test::needs(name, &[&VULKAN], move || f(super::vulkan()))
    }

    /// A test given a device on the first GL adapter that opens.
    pub fn gl(name: String, f: impl FnOnce(GpuContext) + Send + 'static) -> Test {
        Test::needs(name, &[&GL], move || f(super::gl()))
    }

    /// Marks the test ignored (`#[ignore = reason]`): it runs only under `--ignored` / `--include-ignored`.
    pub fn ignore(mut self, reason: &'static str) -> Test {
        self.ignore = Some(reason);
        self
    }

    fn into_trial(self) -> Trial {
        let Test { name, needs, ignore, body } = self;
        let trial = Trial::ignorable_test(name, move || {
            for need in &needs {
                match need.check() {
                    Ok(()) => {}
                    Err(Absent::Missing(why)) if super::in_ci() => {
                        return Err(Failed::from(format!("needs {} (CI=true: a missing one fails): {why}", need.what)));
                    }
                    Err(Absent::Missing(why)) => {
                        need.ignored.fetch_add(1, Ordering::Relaxed);
                        return Ok(Completion::ignored_with(format!("needs {}: {why}", need.what)));
                    }
                    Err(Absent::Broken(why)) => return Err(Failed::from(format!("{} is broken: {why}", need.what))),
                }
            }
            body();
            Ok(Completion::Completed)
        });
        trial.with_ignored_flag(ignore.is_some())
    }
}

/// A CPU test: `cpu_test!(f)` runs `f()`.
macro_rules! cpu_test {
    ($f:ident) => {
        $crate::common::harness::Test::cpu($crate::common::harness::name(module_path!(), stringify!($f)), $f)
    };
}

/// A Vulkan test: `vulkan_test!(f)` runs `f(ctx)`, ignored without a Vulkan adapter.
macro_rules! vulkan_test {
    ($f:ident) => {
        $crate::common::harness::Test::vulkan($crate::common::harness::name(module_path!(), stringify!($f)), $f)
    };
}

/// A GL test: `gl_test!(f)` runs `f(ctx)`, ignored without a GL adapter.
macro_rules! gl_test {
    ($f:ident) => {
        $crate::common::harness::Test::gl($crate::common::harness::name(module_path!(), stringify!($f)), $f)
    };
}

/// `needs_test!(f, REQ, ...)` runs `f()`, ignored unless every requirement is met.
macro_rules! needs_test {
    ($f:ident, $($need:expr),+ $(,)?) => {
        $crate::common::harness::Test::needs(
            $crate::common::harness::name(module_path!(), stringify!($f)),
            &[$(&$need),+],
            $f,
        )
    };
}

pub(crate) use {cpu_test, gl_test, needs_test, vulkan_test};

/// Runs `tests` as libtest would (same arguments, same output) and ends the process with libtest's exit
/// status (see [`exit_now`]). Names must be unique. Ends with one line per requirement that ignored tests.
pub fn main(tests: Vec<Test>) -> ! {
    // Mesa wants XDG_RUNTIME_DIR; set it before any test thread exists.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", "/tmp");
    }
    let mut seen = std::collections::HashSet::new();
    for t in &tests {
        assert!(seen.insert(t.name.clone()), "two tests are named `{}`", t.name);
    }
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS").ok().and_then(|v| v.parse().ok());
    }
    let mut needs: Vec<&'static Requirement> = Vec::new();
    for n in tests.iter().flat_map(|t| t.needs.iter()) {
        if !needs.iter().any(|m| std::ptr::eq(*m, *n)) {
            needs.push(n);
        }
    }
    let conclusion = libtest_mimic::run(&args, tests.into_iter().map(Test::into_trial).collect());
    for need in needs {
        let ignored = need.ignored.load(Ordering::Relaxed);
        if let (Some(Err(Absent::Missing(why))), true) = (need.state.get(), ignored > 0) {
            eprintln!(
                "SKIPPED: {ignored} test(s) need {} and were ignored: {why} (install mesa-vulkan-drivers / libegl1 \
                 libegl-mesa0 libgl1-mesa-dri: bash scripts/test.sh does; with CI=true they fail)",
                need.what
            );
        }
    }
    exit_now(if conclusion.has_failed() { 101 } else { 0 })
}

/// Ends the process with `code` once the results are out, without the exit-time teardown of the drivers'
/// shared libraries. With lavapipe and llvmpipe (EGL) loaded in one process, Mesa 22.3 / glvnd's teardown
/// races with a driver thread's exit: about one run in ten of the merged GPU binary aborted with "double
/// free or corruption" *after* `test result: ok` (core dump: the main thread in `_dl_fini` → libEGL →
/// `__glDispatchDestroyTable`, another thread in `__nptl_deallocate_tsd`). Nothing of ours runs then: every
/// test has finished and every device is dropped; only the drivers' unload is skipped.
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    {
        extern "C" {
            fn _exit(status: i32) -> !;
        }
        // SAFETY: `_exit` ends the process at once; the output above is flushed.
        unsafe { _exit(code) }
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}
