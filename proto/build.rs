//! Compiles the .proto files with protox (pure Rust, no protoc) and generates prost types.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "protos/attestation.proto",
        "protos/join.proto",
        "protos/init.proto",
        "protos/kms.proto",
        "protos/components.proto",
        "protos/registration.proto",
        "protos/gotpm.proto",
        "protos/verify.proto",
        "protos/recover.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["protos"])?;
    // Ordered maps for go-tpm-tools' PCR maps, so decoded values iterate by PCR index.
    prost_build::Config::new().btree_map([".gotpm.v1.Pcrs.pcrs"]).compile_fds(descriptors)?;
    Ok(())
}
