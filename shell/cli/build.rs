//! Records the commit `attest --version` and EAR tokens name (`ATTEST_GIT_COMMIT`): `git rev-parse` of the
//! source tree, else `$ATTEST_GIT_COMMIT` from the environment (a build outside git, e.g. from a packaged
//! crate), else `unknown`.

fn main() {
    println!("cargo:rerun-if-env-changed=ATTEST_GIT_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    // Rebuild when HEAD moves (its reflog changes on every commit and checkout).
    let git_dir = std::process::Command::new("git")
        .args(["-C", &dir, "rev-parse", "--absolute-git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok());
    if let Some(d) = git_dir {
        for f in ["HEAD", "logs/HEAD"] {
            let p = std::path::Path::new(d.trim()).join(f);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let git = std::process::Command::new("git")
        .args(["-C", &dir, "rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let commit = git.or_else(|| std::env::var("ATTEST_GIT_COMMIT").ok()).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ATTEST_GIT_COMMIT={commit}");
}
