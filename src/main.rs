//! The `bitsparse` command-line tool: `info`, `compress`, `decompress`, `analyze`, `bench`, `selftest`
//! (see `bitsparse --help`, README.md and `../shared/CONVENTIONS.md` for flags, exit codes and JSON). All
//! the work is in [`cli`]; this file only hands over the exit code, so that nothing here can panic past
//! the CLI's last-resort handler.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
