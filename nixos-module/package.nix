# cuzk's daemon (cuzkd) and client (cuzk-bench, crate cuzk-cli), with the CUDA kernels compiled by the nvcc of
# the CUDA package set it is given: that set is how a host pins its CUDA version (the NixOS
# module passes services.cuzk.cudaPackages here through .override). libcuda is not linked: it
# comes from the host's NVIDIA driver at run time, found through /run/opengl-driver/lib, which
# autoAddDriverRunpath writes into the binaries' RUNPATH as nixpkgs' GPU packages do (cudarc
# dlopens libcuda, and dlopen honours the calling binary's RUNPATH).
{
  lib,
  rustPlatform,
  cudaPackages,
  autoAddDriverRunpath,
  src,
  # GPU architectures to compile SASS for, e.g. [ "8.9" "9.0" ]; defaults to nixpkgs'
  # cudaCapabilities (nixpkgs.config.cudaCapabilities), so a host builds only what it runs.
  cudaCapabilities ? (cudaPackages.flags or cudaPackages.cudaFlags).cudaCapabilities,
}:

let
  cargoToml = lib.importTOML (src + "/Cargo.toml");
  nvcc = "${lib.getBin cudaPackages.cuda_nvcc}/bin/nvcc";
in
rustPlatform.buildRustPackage {
  pname = "cuzk";
  version = cargoToml.workspace.package.version;
  inherit src;

  cargoLock.lockFile = src + "/Cargo.lock";

  nativeBuildInputs = [
    cudaPackages.cuda_nvcc
    autoAddDriverRunpath
  ];
  # nvcc includes cuda_runtime.h implicitly; the kernels use nothing else from the toolkit.
  buildInputs = [
    cudaPackages.cuda_cudart
    cudaPackages.cuda_cccl
  ];

  env = {
    # crates/cuzk-gpu/build.rs compiles kernels/ with this nvcc; without it the build would
    # silently produce a binary "built without GPU kernels".
    NVCC = nvcc;
    CUZK_GPU_ARCHS = lib.concatMapStringsSep "," (lib.replaceStrings [ "." ] [ "" ]) cudaCapabilities;
  };

  # The daemon and the client (crate cuzk-cli, binary cuzk-bench) only: the lab (crate
  # cuzk-bench, binary cuzk-lab) turns on the test support of cuzk's crates, and cargo would
  # unify that feature into cuzkd if it were built in the same invocation
  # (tools/check-layout.sh checks this exact set; test.nix builds the lab on its own for its
  # fixture).
  cargoBuildFlags = [
    "-p"
    "cuzkd"
    "-p"
    "cuzk-cli"
  ];
  # The workspace's tests need the 2 KiB fixture (minutes to generate) and run in the
  # project's CI; the flake's VM test checks the installed service.
  doCheck = false;

  # The systemd units, D-Bus policy and sysusers/tmpfiles snippets exactly as in systemd/,
  # with the unit pointing at this package's cuzkd.
  postInstall = ''
    install -Dm644 systemd/cuzk.socket $out/lib/systemd/system/cuzk.socket
    install -Dm644 systemd/cuzk.service $out/lib/systemd/system/cuzk.service
    install -Dm644 systemd/cuzk-metrics.socket $out/lib/systemd/system/cuzk-metrics.socket
    substituteInPlace $out/lib/systemd/system/cuzk.service \
      --replace-fail /usr/local/bin/cuzkd $out/bin/cuzkd
    install -Dm644 systemd/dbus-1/system.d/org.cuzk.Prover1.conf \
      $out/share/dbus-1/system.d/org.cuzk.Prover1.conf
    install -Dm644 systemd/sysusers.d/cuzk.conf $out/lib/sysusers.d/cuzk.conf
    install -Dm644 systemd/tmpfiles.d/cuzk.conf $out/lib/tmpfiles.d/cuzk.conf
    install -Dm644 README.md $out/share/doc/cuzk/README.md
    cp -r docs $out/share/doc/cuzk/docs
    # The Grafana dashboard over the metrics endpoint (import it, or point provisioning here).
    install -Dm644 share/grafana/cuzk.json $out/share/cuzk/grafana-dashboard.json
  '';

  passthru = {
    inherit cudaPackages nvcc;
  };

  meta = {
    description = "GPU Groth16 proving daemon for Filecoin (PoRep C2), socket-activated, D-Bus controlled";
    license = with lib.licenses; [
      mit
      asl20
    ];
    mainProgram = "cuzkd";
    platforms = lib.platforms.linux;
  };
}
