# Evaluates nixos-module/ with nixpkgs' lib alone: the NixOS options the module sets or reads
# are stubbed, pkgs is a stand-in (formats.toml renders JSON; cuzk is a fake package that
# records its override). For each scenario it returns the generated cuzk.toml content (as
# JSON), the socket and service drop-in settings, and the messages of the failed assertions.
# The NVIDIA driver options come in two shapes: nixpkgs since 24.11 (hardware.nvidia.enabled,
# read-only) and older ones (services.xserver.videoDrivers, hardware.nvidia.datacenter).
# One scenario imports flake.nix's nixosModules.default with a pkgs that has no cuzk and no
# nixpkgs.overlays option (as under nixpkgs.pkgs, read-only).
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

  fakePackage = origin: cudaPackages: {
    type = "derivation";
    name = "cuzk-fake";
    outPath = "/nix/store/fake-cuzk-${origin}-${cudaPackages.name}";
    inherit cudaPackages;
    override = args: fakePackage origin args.cudaPackages;
  };
  # nixpkgs without pkgs.cuzk (no overlay), as a host with nixpkgs.pkgs has it.
  barePkgs = {
    formats.toml = { }: {
      type = types.attrsOf types.anything;
      generate = name: value: {
        inherit name;
        json = value;
      };
    };
    stdenv.hostPlatform.system = "x86_64-linux";
    cudaPackages = {
      name = "cuda-default";
      cudaMajorMinorVersion = "12.9";
    };
    cudaPackages_12_8 = {
      name = "cuda-12.8";
      cudaMajorMinorVersion = "12.8";
    };
    # An older nixpkgs names the version cudaVersion.
    cudaPackages_12_4 = {
      name = "cuda-12.4";
      cudaVersion = "12.4";
    };
  };
  pkgs = barePkgs // {
    cuzk = fakePackage "overlay" pkgs.cudaPackages;
  };

  # The flake's nixosModules.default, its package from a stand-in `self`.
  flakeModule =
    ((import ../../flake.nix).outputs {
      self.packages.x86_64-linux.cuzk = fakePackage "flake" barePkgs.cudaPackages;
      nixpkgs = { inherit lib; };
    }).nixosModules.default;

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
  # The NVIDIA driver as nixpkgs since 24.11 declares it.
  nvidiaStubs =
    { config, ... }:
    {
      options = {
        services.xserver.videoDrivers = mkOption {
          type = types.listOf types.str;
          default = [ ];
        };
        hardware.nvidia.datacenter.enable = mkOption {
          type = types.bool;
          default = false;
        };
        hardware.nvidia.enabled = mkOption {
          type = types.bool;
          readOnly = true;
          default =
            lib.elem "nvidia" config.services.xserver.videoDrivers || config.hardware.nvidia.datacenter.enable;
        };
      };
    };
  # An older nixpkgs: no hardware.nvidia.enabled.
  olderNvidiaStubs = {
    options = {
      services.xserver.videoDrivers = mkOption {
        type = types.listOf types.str;
        default = [ ];
      };
      hardware.nvidia.datacenter.enable = mkOption {
        type = types.bool;
        default = false;
      };
    };
  };

  evalIn =
    {
      module ? ../../nixos-module,
      hostPkgs ? pkgs,
      driverStubs ? nvidiaStubs,
      host ? { },
    }:
    cuzk:
    let
      c =
        (lib.evalModules {
          modules = [
            stubs
            driverStubs
            module
            host
            { services.cuzk = cuzk; }
          ];
          specialArgs.pkgs = hostPkgs;
        }).config;
    in
    {
      config = c.environment.etc."cuzk/cuzk.toml".source.json;
      socket = c.systemd.sockets.cuzk;
      metricsSocket = c.systemd.sockets.cuzk-metrics or null;
      service = c.systemd.services.cuzk;
      package = c.services.cuzk.finalPackage.outPath;
      kernelModules = c.boot.kernelModules;
      firewall = c.networking.firewall.allowedTCPPorts;
      failed = map (a: a.message) (lib.filter (a: !a.assertion) c.assertions);
    };
  evalWith = evalIn { };
  withDriver = evalIn { host.services.xserver.videoDrivers = [ "nvidia" ]; };

  gib = 1024 * 1024 * 1024;
in
{
  # The CPU-only host of the VM test: nothing but ordinals-free defaults.
  minimal = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
  };

  # Two GPUs with different budgets, a pinned CUDA, memory budgets, TCP.
  twoGpus = withDriver {
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

  plainOrdinals = evalIn { host.hardware.nvidia.datacenter.enable = true; } {
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

  # The metrics endpoint: its own socket unit, named for cuzkd, the port opened; IPv6 in
  # brackets. Contradictions: the port opened without the endpoint, the endpoint on the TCP
  # listener's port, and settings.metrics.listen (unreachable inside PrivateNetwork).
  metrics = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
    metrics = {
      enable = true;
      openFirewall = true;
    };
  };
  metricsV6 = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
    metrics = {
      enable = true;
      listenAddress = "::";
      port = 9900;
    };
  };
  metricsContradictions = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
    tcp = {
      enable = true;
      insecure = true;
      port = 9821;
    };
    metrics.enable = true;
    settings.metrics.listen = "127.0.0.1:9821";
  };
  metricsFirewallAlone = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
    metrics.openFirewall = true;
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
    cudaPackages = pkgs.cudaPackages_12_4;
    settings = {
      daemon.tcp.insecure = false;
      gpus.backend = "cpu";
      gpus.devices = [ 3 ];
      srs.param_cache = "/elsewhere";
      daemon.state_dir = "/srv/cuzk";
    };
  };

  # IPv6 listeners are bracketed in ListenStream=; IPv4 and bracketed ones stay as given.
  listeners = map (
    address:
    let
      r = evalWith {
        enable = true;
        tcp = {
          enable = true;
          insecure = true;
          inherit address;
        };
        openFirewall = true;
      };
    in
    {
      inherit address;
      inherit (r) failed firewall;
      listen = lib.last r.socket.socketConfig.ListenStream;
    }
  ) [
    "::"
    "fd00::5"
    "[fd00::5]"
    "0.0.0.0"
  ];

  # A 300 s drain: the unit waits 330 s on stop.
  longDrain = evalWith {
    enable = true;
    settings.gpus.backend = "cpu";
    settings.daemon.drain_timeout_secs = 300;
  };

  # Freeform settings pass through; typed keys left null are not written.
  freeform = evalWith {
    enable = true;
    settings = {
      engine.synthesis_workers = 8;
      gpus.gpu_workers_per_device = 2;
      log.level = "debug";
    };
  };
  # A typed key with a value cuzkd does not know stops the evaluation.
  badBackendRefused =
    let
      r = evalWith {
        enable = true;
        settings.gpus.backend = "tpu";
      };
    in
    !(builtins.tryEval (builtins.deepSeq r.config r.config)).success;

  # The NVIDIA driver: backend "gpu" without one is refused; an older nixpkgs (no
  # hardware.nvidia.enabled) is asked through videoDrivers; with no driver options at all
  # the evaluation still works (and refuses).
  gpuBackendNoDriver = evalWith {
    enable = true;
    settings.gpus.backend = "gpu";
  };
  olderNixpkgsDriver = evalIn {
    driverStubs = olderNvidiaStubs;
    host.services.xserver.videoDrivers = [ "nvidia" ];
  } {
    enable = true;
    gpus = [ { ordinal = 0; } ];
  };
  olderNixpkgsNoDriver = evalIn { driverStubs = olderNvidiaStubs; } {
    enable = true;
    gpus = [ { ordinal = 0; } ];
  };
  noDriverOptions = evalIn { driverStubs = { }; } {
    enable = true;
    gpus = [ { ordinal = 0; } ];
  };

  # The flake's module on a host whose pkgs has no cuzk: the flake's own package, rebuilt
  # with the host's CUDA; a package set explicitly wins. And the bare module with the
  # package given explicitly.
  flakeModule = evalIn {
    module = flakeModule;
    hostPkgs = barePkgs;
  } { enable = true; };
  flakeModuleExplicit = evalIn {
    module = flakeModule;
    hostPkgs = barePkgs;
  } {
    enable = true;
    package = fakePackage "explicit" barePkgs.cudaPackages;
  };
  # Neither: the evaluation stops (with the message of services.cuzk.package's default).
  missingPackageRefused =
    !(builtins.tryEval (evalIn { hostPkgs = barePkgs; } { enable = true; }).package).success;
  explicitPackage = evalIn { hostPkgs = barePkgs; } {
    enable = true;
    package = fakePackage "explicit" barePkgs.cudaPackages;
    cudaPackages = barePkgs.cudaPackages_12_8;
  };
}
