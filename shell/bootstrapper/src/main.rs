//! `attest-bootstrapper`: a thin `main`; the command (arguments, wiring, exit codes) is [`attest_bootstrapper::cmd`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    attest_bootstrapper::cmd::main()
}
