//! Compiles proto/ with protox (a protobuf compiler in Rust: no protoc on build machines) and
//! generates the tonic client and server.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
