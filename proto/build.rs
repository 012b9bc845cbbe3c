//! Compiles the .proto files with protox (pure Rust, no protoc) and generates prost types.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "protos/attestation.proto",
        "protos/join.proto",
        "protos/init.proto",
        "protos/kms.proto",
        "protos/components.proto",
        "protos/registration.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["protos"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
