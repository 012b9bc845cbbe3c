//! `join-service`: a thin `main`; the command (arguments, wiring, exit codes) is [`attest_joinservice::cmd`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    attest_joinservice::cmd::main()
}
