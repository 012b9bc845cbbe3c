//! `key-service`: a thin `main`; the command (arguments, wiring, exit codes) is [`attest_keyservice::cmd`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    attest_keyservice::cmd::main()
}
