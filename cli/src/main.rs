//! The `bitsparse` command-line tool: `info`, `compress`, `decompress`, `analyze`, `bench`, `selftest`
//! (see `bitsparse --help`, README.md and docs/CONVENTIONS.md for flags, exit codes and JSON). All the
//! work is in the `bitsparse_cli` library; this file only hands over the exit code, so that nothing here
//! can panic past the CLI's last-resort handler.

fn main() -> std::process::ExitCode {
    bitsparse_cli::main()
}
