{
  description = "cuzk: GPU Groth16 proving daemon for Filecoin, with its NixOS module";

  # Pinned in flake.lock (nixos-25.11 at 25f53830, rustc 1.91, cudaPackages_12_8); `nix flake
  # update` moves it. cuzk needs a nixpkgs whose rustc is at least the workspace's
  # rust-version (1.89, Cargo.toml); tools/check-flake-lock.py checks the lock in CI.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      # CUDA's toolkit is unfree; cuzk's kernels are compiled with its nvcc.
      pkgsFor =
        system:
        import nixpkgs {
          inherit system;
          config.allowUnfree = true;
          overlays = [ self.overlays.default ];
        };
      forAllSystems = f: lib.genAttrs systems (system: f (pkgsFor system));
      # Only what the build reads: a change to tests does not rebuild the package.
      src = lib.fileset.toSource {
        root = ./.;
        fileset = lib.fileset.unions [
          ./Cargo.toml
          ./Cargo.lock
          ./crates
          ./kernels
          ./systemd
          ./share # the Grafana dashboard
          ./README.md # also read by a config test (include_str!)
          ./docs # the operator, configuration, command-line and metrics references
        ];
      };
    in
    {
      # pkgs.cuzk, built against CUDA 12.8 of the importing nixpkgs (override it to pin another
      # CUDA version, as services.cuzk.cudaPackages does).
      overlays.default = final: prev: {
        cuzk = final.callPackage ./nixos-module/package.nix {
          inherit src;
          # The CUDA set the default build pins (services.cuzk.cudaPackages overrides it).
          cudaPackages = final.cudaPackages_12_8;
        };
      };

      packages = forAllSystems (pkgs: {
        cuzk = pkgs.cuzk;
        default = pkgs.cuzk;
      });

      # services.cuzk, with this flake's package as the default of services.cuzk.package. No
      # overlay: a host whose pkgs is read-only (nixpkgs.pkgs set, overlays ignored) works
      # too. overlays.default stays for those who want pkgs.cuzk.
      nixosModules.default =
        { lib, pkgs, ... }:
        {
          imports = [ ./nixos-module ];
          services.cuzk.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.cuzk;
        };

      checks = forAllSystems (pkgs: {
        vm-socket-activated = pkgs.testers.runNixOSTest (
          import ./nixos-module/test.nix { nixosModule = self.nixosModules.default; }
        );
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ pkgs.cuzk ];
          packages = with pkgs; [
            cargo
            rustc
            clippy
            rustfmt
            rust-analyzer
          ];
          # build.rs takes nvcc from NVCC: the pinned CUDA's, as in the package. For quicker
          # kernel builds, narrow the architectures: export CUZK_GPU_ARCHS=90
          env.NVCC = pkgs.cuzk.nvcc;
          shellHook = ''
            echo "cuzk dev shell: $($NVCC --version | tail -1)"
          '';
        };
      });

      formatter = forAllSystems (pkgs: pkgs.nixfmt-rfc-style);
    };
}
