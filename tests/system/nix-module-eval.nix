# Evaluates nixos-module/ with nixpkgs' lib alone: the NixOS options the module sets are
# stubbed, pkgs is a stand-in (formats.toml renders JSON; cuzk is a fake package that records
# its override). For each scenario it returns the generated cuzk.toml content (as JSON), the
# socket and service drop-in settings, and the messages of the failed assertions.
#   nix-instantiate --eval --strict --json tests/system/nix-module-eval.nix --arg lib 'import /path/to/nixpkgs.lib/lib'
{ lib }:

let
  inherit (lib) mkOption types;
  anything = mkOption {
    type = types.anything;
    default = null;
  };
  listOfAnything = mkOption {
    type = types.listOf types.anything;
    default = [ ];
  };
  attrsOfAnything = mkOption {
    type = types.attrsOf types.anything;
    default = { };
  };

  fakePackage = cudaPackages: {
    type = "derivation";
    name = "cuzk-fake";
    outPath = "/nix/store/fake-cuzk-${cudaPackages.name}";
    inherit cudaPackages;
    override = args: fakePackage args.cudaPackages;
  };
  pkgs = {
    formats.toml = { }: {
      type = types.attrsOf types.anything;
      generate = name: value: {
        inherit name;
        json = value;
      };
    };
    cudaPackages.name = "cuda-default";
    cudaPackages_12_8.name = "cuda-12.8";
    cuzk = fakePackage pkgs.cudaPackages;
  };

  # The NixOS options services.cuzk writes to, as bare stubs.
  stubs = {
    options = {
      assertions = listOfAnything;
      warnings = listOfAnything;
      environment.etc = attrsOfAnything;
      environment.systemPackages = listOfAnything;
      users.users = attrsOfAnything;
      users.groups = attrsOfAnything;
      systemd.packages = listOfAnything;
      systemd.tmpfiles.packages = listOfAnything;
      systemd.sockets = attrsOfAnything;
      systemd.services = attrsOfAnything;
      services.dbus.packages = listOfAnything;
      boot.kernelModules = listOfAnything;
      networking.firewall.allowedTCPPorts = listOfAnything;
      meta = attrsOfAnything;
    };
  };

  evalWith =
    cuzk:
    let
      c =
        (lib.evalModules {
          modules = [
            stubs
            ../../nixos-module
            { services.cuzk = cuzk; }
          ];
          specialArgs = { inherit pkgs; };
        }).config;
    in
    {
      config = c.environment.etc."cuzk/cuzk.toml".source.json;
      socket = c.systemd.sockets.cuzk;
      service = c.systemd.services.cuzk;
      package = c.services.cuzk.finalPackage.outPath;
      kernelModules = c.boot.kernelModules;
      firewall = c.networking.firewall.allowedTCPPorts;
      failed = map (a: a.message) (lib.filter (a: !a.assertion) c.assertions);
    };

  gib = 1024 * 1024 * 1024;
in
{
  # The CPU-only host of the VM test: nothing but ordinals-free defaults.
  minimal = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
  };

  # Two GPUs with different budgets, a pinned CUDA, memory budgets, TCP.
  twoGpus = evalWith {
    enable = true;
    cudaPackages = pkgs.cudaPackages_12_8;
    gpus = [
      {
        ordinal = 0;
        vramBudget = 70 * gib;
        workersPerDevice = 2;
      }
      {
        ordinal = 1;
        vramBudget = 20 * gib;
      }
    ];
    hostMemoryBudget = 384 * gib;
    pinnedMemoryBudget = 64 * gib;
    paramDir = "/data/filecoin-proof-parameters";
    tcp.enable = true;
    tcp.address = "10.0.0.5";
    tcp.tokenFile = "/run/keys/cuzk-token";
    tcp.tls = {
      certFile = "/var/lib/acme/prover/cert.pem";
      keyFile = "/var/lib/acme/prover/key.pem";
      clientCaFile = "/etc/cuzk/clients-ca.pem";
    };
    openFirewall = true;
    settings.gpus.backend = "gpu";
  };

  plainOrdinals = evalWith {
    enable = true;
    gpus = [
      { ordinal = 0; }
      { ordinal = 1; }
    ];
  };

  # A TCP listener nobody authenticates: refused, unless insecure says so.
  openTcp = evalWith {
    enable = true;
    tcp.enable = true;
  };
  insecureTcp = evalWith {
    enable = true;
    tcp.enable = true;
    tcp.insecure = true;
  };

  contradictions = evalWith {
    enable = true;
    gpus = [
      { ordinal = 0; }
      { ordinal = 0; }
    ];
    hostMemoryBudget = 8 * gib;
    pinnedMemoryBudget = 16 * gib;
    paramDir = "/home/alice/params";
    openFirewall = true;
    socket.group = "nosuchgroup";
    tcp.tls.clientCaFile = "clients-ca.pem";
    tcp.tokenFile = "/nix/store/0000-cuzk-token";
    tcp.insecure = true;
    settings = {
      daemon.tcp.insecure = false;
      gpus.backend = "cpu";
      gpus.devices = [ 3 ];
      srs.param_cache = "/elsewhere";
      daemon.state_dir = "/srv/cuzk";
    };
  };
}
