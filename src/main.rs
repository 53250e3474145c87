//! `zkv`: the command line of the zkv key-value store for zoned (ZNS) SSDs.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
