#!/usr/bin/env bash
# The booted-systemd test in a real VM: qemu-system-x86_64 boots Debian's own kernel and a
# disk made from an mmdebstrap root filesystem (not a container), cuzk is installed into it
# over ssh as README.md's plain-systemd steps do, and booted.sh's checks (checks.sh) run
# against it over ssh. Two checks only a VM can make follow: the unit's DevicePolicy=closed /
# DeviceAllow= refuse a device outside the allow list (the device cgroup's BPF program is
# enforced by this kernel; in a container the container's own device policy is in the way),
# and MemoryDenyWriteExecute= holds (cuzkd runs under a seccomp filter, and a writable and
# executable mapping is refused under the unit's own sandbox settings).
#
# Run as root from anywhere:  bash tests/system/vm.sh
# Needs: target/release/{cuzkd,cuzk-bench} (built if missing), the 2 KiB fixture
# (cuzk-lab gen-fixture --sector-size 2KiB; CUZK_FIXTURE_DIR as for the other tests), and
# Debian's package mirror for the first run: the VM image (disk, kernel, initrd and the ssh
# key that logs into it) is cached in ~/.cache/cuzk/vm-<hash>/, keyed by the suite, the
# package list and this script's image recipe (CUZK_CACHE_DIR to move it). Each run boots a
# qcow2 overlay of it, thrown away afterwards, so the cached image stays as built.
# KVM is used when /dev/kvm boots the guest, TCG otherwise (CUZK_VM_ACCEL=kvm|tcg forces one).
# CUZK_VM_KEEP=1 keeps the VM up instead of checking (prints the ssh command).
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
. "$HERE/lib.sh"


# What the VM's root filesystem holds besides Debian's minbase: booted.sh's packages
# (systemd as init, the system bus), a kernel with its initramfs, and sshd, the channel the
# checks run over (key login as root; the key is made with the image and cached with it).
VM_PACKAGES="$ROOTFS_PACKAGES,linux-image-amd64,openssh-server,e2fsprogs"

# The kill -9 check's proof. booted.sh proves the 2 KiB PoRep: that check takes about 110 s
# natively on 2 cores. Under TCG (no working KVM, as on CI) the same check with a 2 KiB
# WinningPoSt already takes about 150 s (boot to power-off about 5.5 min), and the PoRep has
# a 1.1 GB parameter file to copy in and load and a larger circuit: many times that. So the VM
# proves the WinningPoSt: the same daemon path (the job spooled before it is acknowledged,
# run again after the restart, attached to by request id) with a 47 MB parameter file (2 KiB
# WinningPoSt's, as cuzkd names it when it is missing). Only that file and its .vk are copied
# into the VM.
PROOF_ARGS=(-t winning --input /root/winning.json)
PROOF_PARAMS="v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e"
PROOF_TIMEOUT=600

[ "$(id -u)" = 0 ] || { echo "vm.sh: run as root" >&2; exit 2; }
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

ensure_vm_tools() {
  local missing=() suite
  suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
  # qemu-system-x86 and qemu-utils must come from one release: a qemu-utils from backports
  # (the CI image has one) makes apt remove it when it installs the release's qemu-system-x86,
  # and qemu-img is gone. So both are installed from the release, downgrading qemu-utils.
  if ! command -v qemu-system-x86_64 >/dev/null; then
    missing+=(qemu-system-x86 "qemu-utils/$suite")
  elif ! command -v qemu-img >/dev/null; then
    missing+=(qemu-utils)
  fi
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || missing+=(openssh-client)
  command -v mke2fs >/dev/null || missing+=(e2fsprogs)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends --allow-downgrades "${missing[@]}" >/dev/null
  fi
  local t
  for t in qemu-system-x86_64 qemu-img mmdebstrap ssh ssh-keygen mke2fs; do
    command -v "$t" >/dev/null || { echo "vm.sh: $t is still missing after installing ${missing[*]}" >&2; exit 2; }
  done
}
ensure_vm_tools

# --- the cached VM image ---------------------------------------------------------------------
# vm_image_build DIR: builds disk.qcow2 (ext4 on the whole disk, the guest's /dev/vda),
# vmlinuz, initrd.img and id_ed25519 (root's ssh key) into DIR. Its text is part of the cache
# key: a change here builds a new image.
vm_image_build() {
  local out="$1" suite="$2" tmp="$1.part"
  rm -rf "$tmp"; mkdir -p "$tmp"
  ssh-keygen -q -t ed25519 -N '' -C cuzk-vm-test -f "$tmp/id_ed25519" || return 1
  # The initramfs holds only what finds the root disk (MODULES=list): small, so quick to
  # unpack under TCG. Written before the kernel package runs update-initramfs.
  # The guest's network is qemu's user-mode one (10.0.2.0/24, host 10.0.2.2), configured
  # statically by systemd-networkd; sshd is reached through a forwarded localhost port.
  mmdebstrap --quiet --variant=minbase --include="$VM_PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"' \
    --setup-hook='printf "MODULES=list\n" >"$1/etc/initramfs-tools/conf.d/cuzk-vm.conf"' \
    --setup-hook='printf "virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n" >"$1/usr/share/initramfs-tools/modules.d/cuzk-vm"' \
    --customize-hook='echo cuzk-vm >"$1/etc/hostname"' \
    --customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\n" >"$1/etc/fstab"' \
    --customize-hook='printf "[Match]\nType=ether\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\n" >"$1/etc/systemd/network/10-qemu-user.network"' \
    --customize-hook='chroot "$1" systemctl enable systemd-networkd.service >/dev/null 2>&1' \
    --customize-hook="install -d -m 0700 \"\$1/root/.ssh\" && install -m 0600 '$tmp/id_ed25519.pub' \"\$1/root/.ssh/authorized_keys\"" \
    --customize-hook="cp \"\$1\"/boot/vmlinuz-* '$tmp/vmlinuz' && cp \"\$1\"/boot/initrd.img-* '$tmp/initrd.img'" \
    "$suite" "$tmp/root" >&2 || return 1
  # ext4 filled from the directory (mke2fs -d: no loop device or mount needed); 8 GiB
  # sparse, room for the parameters and the state the checks write.
  mke2fs -q -t ext4 -L cuzk-vm -d "$tmp/root" "$tmp/disk.raw" 8G >&2 || return 1
  qemu-img convert -O qcow2 "$tmp/disk.raw" "$tmp/disk.qcow2" >&2 || return 1
  rm -rf "$tmp/root" "$tmp/disk.raw"
  rm -rf "$out"; mv "$tmp" "$out"
}

# vm_image: prints the cached image's directory, building it first if needed.
vm_image() {
  local suite key dir
  suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
  key="$( { printf '%s\n' "$suite" minbase "$VM_PACKAGES"; declare -f vm_image_build; } \
    | sha256sum | cut -c1-16)"
  dir="$CACHE_DIR/vm-$key"
  if [ ! -s "$dir/disk.qcow2" ]; then
    mkdir -p "$CACHE_DIR"
    echo "building the VM image ($suite, minbase + $VM_PACKAGES) into $dir" >&2
    vm_image_build "$dir" "$suite" || { rm -rf "$dir.part"; return 1; }
  fi
  echo "$dir"
}

# --prepare: only the tools and the cached image (CI builds them while it compiles and tests:
# they are downloads and unpacking, not the CPU), then exit.
if [ "${1:-}" = --prepare ]; then
  vm_image >/dev/null || { echo "vm.sh: could not build the VM image" >&2; exit 2; }
  echo "vm.sh --prepare: tools and VM image ready after $(elapsed)"
  exit 0
fi

FIXTURE="${CUZK_FIXTURE_DIR:-$HOME/.cache/cuzk/fixtures}/2KiB"
for f in kinds/winning.json "params/$PROOF_PARAMS.params" "params/$PROOF_PARAMS.vk" parents; do
  [ -e "$FIXTURE/$f" ] || {
    echo "vm.sh: no 2 KiB fixture at $FIXTURE ($f missing):" \
      "run cargo run --release -p cuzk-bench -- gen-fixture --sector-size 2KiB" >&2
    exit 2
  }
done

if [ ! -x "$REPO/target/release/cuzkd" ] || [ ! -x "$REPO/target/release/cuzk-bench" ]; then
  (cd "$REPO" && cargo build --release -p cuzkd -p cuzk-cli) || exit 2
fi

IMAGE="$(vm_image)" || { echo "vm.sh: could not build the VM image" >&2; exit 2; }
echo "VM image ready after $(elapsed): $IMAGE ($(du -sh "$IMAGE/disk.qcow2" | cut -f1))"

WORK="$(mktemp -d /var/tmp/cuzk-vm.XXXXXX)"
QEMU_PID=""
SSH_OPTS=(-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
  -o LogLevel=ERROR -o ConnectTimeout=10 -o ServerAliveInterval=10 -o ServerAliveCountMax=6
  -i "$WORK/id_ed25519" -o ControlPath="$WORK/ssh.ctl")
cleanup() {
  [ -S "$WORK/ssh.ctl" ] && ssh "${SSH_OPTS[@]}" -p "${PORT:-0}" -O exit root@127.0.0.1 >/dev/null 2>&1
  if [ -n "$QEMU_PID" ]; then kill "$QEMU_PID" 2>/dev/null; wait "$QEMU_PID" 2>/dev/null; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# ssh forwards this script's stdin to each command: give it none (reload_live pipes its own).
exec </dev/null

# --- what this run installs, shared read-only into the VM (virtio-9p) -------------------------
# The per-run overlay takes every write, so the cached disk stays as built.
set -e
cp "$IMAGE/id_ed25519" "$WORK/id_ed25519"; chmod 600 "$WORK/id_ed25519"
qemu-img create -q -f qcow2 -F qcow2 -b "$IMAGE/disk.qcow2" "$WORK/overlay.qcow2"
SHARE="$WORK/share"
mkdir -p "$SHARE/params" "$SHARE/parents"
cp "$REPO/target/release/cuzkd" "$REPO/target/release/cuzk-bench" "$SHARE/"
cp -r "$REPO/systemd" "$SHARE/systemd"
cp "$FIXTURE/params/$PROOF_PARAMS".{params,vk} "$SHARE/params/"
cp "$FIXTURE/parents/"* "$SHARE/parents/"
cp "$FIXTURE/kinds/winning.json" "$SHARE/winning.json"
printf '[gpus]\nbackend = "cpu"\n' >"$SHARE/cuzk.toml"
# booted.sh's two local users: "visitor" is in no group of cuzk's, "curio" is in group cuzk.
cat >"$SHARE/booted-test.conf" <<'SYSUSERS'
u visitor - "vm.sh user outside group cuzk"
u curio - "vm.sh user in group cuzk"
m curio cuzk
SYSUSERS
set +e

# --- boot ------------------------------------------------------------------------------------
free_port() {
  local p
  for _ in $(seq 50); do
    p=$(( 20000 + RANDOM % 40000 ))
    ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

# start_vm ACCEL: starts qemu in the background (QEMU_PID, PORT, console in console.log).
start_vm() {
  local accel="$1" cpu=max
  [ "$accel" = kvm ] && cpu=host
  PORT="$(free_port)" || return 1
  : >"$WORK/console.log"
  qemu-system-x86_64 -machine q35 -accel "$accel" -cpu "$cpu" -m 4G -smp 2 \
    -nodefaults -display none -no-reboot -monitor none -serial "file:$WORK/console.log" \
    -kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=false" \
    -drive "file=$WORK/overlay.qcow2,if=virtio,format=qcow2,discard=unmap" \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$PORT-:22" -device virtio-net-pci,netdev=n0 \
    -virtfs "local,path=$SHARE,mount_tag=cuzkhost,security_model=none,readonly=on" \
    >"$WORK/qemu.log" 2>&1 &
  QEMU_PID=$!
}
stop_vm() {
  [ -n "$QEMU_PID" ] || return 0
  kill "$QEMU_PID" 2>/dev/null; wait "$QEMU_PID" 2>/dev/null; QEMU_PID=""
}

# wait_ssh SECONDS: waits for sshd and opens the shared ssh connection the checks run over.
wait_ssh() {
  local deadline=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    kill -0 "$QEMU_PID" 2>/dev/null || return 1
    ssh "${SSH_OPTS[@]}" -p "$PORT" -o ControlMaster=yes -o ControlPersist=yes -f -N \
      root@127.0.0.1 >/dev/null 2>&1 && return 0
    sleep 2
  done
  return 1
}

# in_ct CMD...: runs CMD in the VM as root with a clean environment (lib.sh's in_ct, over ssh;
# the arguments are quoted for the remote shell, root's bash).
in_ct() {
  ssh "${SSH_OPTS[@]}" -p "$PORT" -o ControlMaster=no root@127.0.0.1 -- "$(printf '%q ' \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@")"
}

ACCEL="${CUZK_VM_ACCEL:-}"
if [ -z "$ACCEL" ]; then
  # KVM when /dev/kvm is there and the guest kernel really runs under it (some hosts expose a
  # /dev/kvm that opens but cannot run a guest): the kernel's banner on the console within
  # 30 s; otherwise TCG.
  ACCEL=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    start_vm kvm
    for _ in $(seq 60); do
      kill -0 "$QEMU_PID" 2>/dev/null || break
      grep -q 'Linux version' "$WORK/console.log" && { ACCEL=kvm; break; }
      sleep 0.5
    done
    if [ "$ACCEL" = kvm ] && wait_ssh 120; then
      :
    else
      echo "KVM did not boot the guest ($(tail -c 300 "$WORK/qemu.log" | tr '\n' ' ')); using TCG"
      ACCEL=tcg; stop_vm
    fi
  fi
fi
if [ -z "$QEMU_PID" ]; then
  echo "booting the VM under $ACCEL"
  start_vm "$ACCEL" || { echo "vm.sh: no free port" >&2; exit 1; }
  wait_ssh 600 || { cat "$WORK/qemu.log"; tail -n 60 "$WORK/console.log"; echo "vm.sh: no ssh into the VM"; exit 1; }
fi
echo "VM up under $ACCEL (ssh on 127.0.0.1:$PORT); $(elapsed) since start"
in_ct systemctl is-system-running --wait >/dev/null
echo "kernel $(in_ct uname -r), systemd $(in_ct systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'), state $(in_ct systemctl is-system-running)"

# --- install, as the plain-systemd steps in README.md ("Run it as a service") do -------------
# On the running system, from the share; the parameters and parent cache go where paramfetch
# puts them, /var/tmp, which the unit binds read-only into its private /var/tmp.
install_cuzk() {
  set -e
  mkdir -p /mnt/host
  mount -t 9p -o trans=virtio,version=9p2000.L,ro cuzkhost /mnt/host
  cd /mnt/host
  install -m 0755 cuzkd cuzk-bench /usr/local/bin/
  install -m 0644 systemd/cuzk.socket systemd/cuzk.service systemd/cuzk-metrics.socket /etc/systemd/system/
  install -D -m 0644 systemd/sysusers.d/cuzk.conf /etc/sysusers.d/cuzk.conf
  install -D -m 0644 systemd/tmpfiles.d/cuzk.conf /etc/tmpfiles.d/cuzk.conf
  install -D -m 0644 systemd/dbus-1/system.d/org.cuzk.Prover1.conf \
    /etc/dbus-1/system.d/org.cuzk.Prover1.conf
  install -m 0644 booted-test.conf /etc/sysusers.d/booted-test.conf
  systemd-sysusers && systemctl reload dbus
  install -d /etc/cuzk && install -m 0644 cuzk.toml /etc/cuzk/cuzk.toml
  install -m 0644 winning.json /root/winning.json
  install -d /var/tmp/filecoin-proof-parameters /var/tmp/filecoin-parents
  install -m 0644 params/* /var/tmp/filecoin-proof-parameters/
  install -m 0644 parents/* /var/tmp/filecoin-parents/
  systemctl daemon-reload && systemctl enable --now cuzk.socket cuzk-metrics.socket
  cd / && umount /mnt/host
}
in_ct bash -c "$(declare -f install_cuzk); install_cuzk" \
  || { echo "vm.sh: installing cuzk in the VM failed" >&2; exit 1; }
echo "cuzk installed; $(elapsed) since start"
if [ -n "${CUZK_VM_KEEP:-}" ]; then
  echo "VM up: ssh ${SSH_OPTS[*]} -p $PORT root@127.0.0.1   (Ctrl-C or kill $$ to power it off)"
  while kill -0 "$QEMU_PID" 2>/dev/null; do sleep 1; done
  exit 0
fi

# --- booted.sh's checks ----------------------------------------------------------------------
T_CHECKS=$(date +%s)
. "$HERE/checks.sh"

# --- what only a VM can check ----------------------------------------------------------------
# The daemon is active again (clean_stop's last call started it).

# DevicePolicy=closed with DeviceAllow= only for the NVIDIA majors: systemd attaches a BPF
# device program to cuzk.service's cgroup, and the kernel consults it on every open of a
# device node by a process in that cgroup, whatever its uid or capabilities. The probe is a
# root shell moved into cuzk.service's own cgroup (the one cuzkd runs in, as systemctl
# shows it) and into cuzkd's mount namespace: the VM's disk /dev/vda, which root opens
# outside the unit, must be refused there with EPERM, and /dev/null (on DevicePolicy=closed's
# built-in list) must open. That is the unit's policy as the kernel enforces it, not a copy of
# its settings.
devices_refused() {
  local pid cg probe
  in_ct systemctl show -p DevicePolicy -p DeviceAllow -p ControlGroup cuzk.service
  [ "$(in_ct systemctl show -p DevicePolicy --value cuzk.service)" = closed ] || return 1
  pid="$(main_pid)"; cg="$(in_ct systemctl show -p ControlGroup --value cuzk.service)"
  [ "$pid" != 0 ] && [ -n "$cg" ] || { echo "cuzk.service is not running"; return 1; }
  echo "outside the unit, root reads /dev/vda:"
  in_ct dd if=/dev/vda of=/dev/null bs=512 count=1 || return 1
  probe='echo $$ >"/sys/fs/cgroup$1/cgroup.procs" && exec nsenter -t "$2" -m dd if="$3" of=/dev/null bs=512 count=1'
  echo "in cuzk.service's cgroup ($cg) and cuzkd's (pid $pid) mount namespace:"
  expect_failure "/dev/vda.*Operation not permitted" in_ct sh -c "$probe" sh "$cg" "$pid" /dev/vda || return 1
  expect_output 'records in' in_ct sh -c "$probe" sh "$cg" "$pid" /dev/null
}
check "DevicePolicy=closed: in cuzk.service's cgroup /dev/vda is refused (EPERM), /dev/null opens" devices_refused

# MemoryDenyWriteExecute=yes: systemd installs a seccomp filter that makes mmap() with both
# PROT_WRITE and PROT_EXEC (and mprotect()/pkey_mprotect() adding PROT_EXEC) fail with EPERM.
# A seccomp filter cannot be entered from outside, so: (1) the running cuzkd is under seccomp
# filtering (Seccomp: 2 in /proc/PID/status; its SystemCallFilter= contributes too) and the
# unit has the property; (2) a probe runs as a transient service with every sandbox setting of
# the installed cuzk.service ([Service] less what only concerns the process's lifecycle and
# the directories systemd makes), and mmap(PROT_READ|PROT_WRITE|PROT_EXEC) is refused with
# EPERM there, while a PROT_READ|PROT_WRITE mapping succeeds under the same settings and the
# W+X one succeeds when only MemoryDenyWriteExecute=no is added: the refusal is this
# property's, under the unit's own filter set. The probe is perl's syscall(): mmap is x86-64
# syscall 9, MAP_PRIVATE|MAP_ANONYMOUS = 0x22 (prot "+ 0": syscall() passes a string argument
# as a pointer, a number as itself).
MMAP_PROBE='my $r = syscall(9, 0, 4096, $ARGV[0] + 0, 0x22, -1, 0); if ($r == -1) { print "mmap(prot=$ARGV[0]): $!\n"; exit 1 } print "mmap(prot=$ARGV[0]): mapped\n"'
unit_sandbox_props() {  # -p ASSIGNMENT for each sandbox line of the installed unit's [Service]
  in_ct sed -n '/^\[Service\]/,/^\[/p' /etc/systemd/system/cuzk.service \
    | grep -E '^[A-Za-z]+=' \
    | grep -Ev '^(Type|NotifyAccess|ExecStart|ExecReload|Restart|RestartSec|WatchdogSec|TimeoutStopSec|TimeoutStartSec|StateDirectory|StateDirectoryMode|ConfigurationDirectory)=' \
    | sed 's/^/-p\n/'
}
mdwe_holds() {
  local pid props=()
  [ "$(in_ct systemctl show -p MemoryDenyWriteExecute --value cuzk.service)" = yes ] \
    || { echo "cuzk.service: MemoryDenyWriteExecute is not yes"; return 1; }
  pid="$(main_pid)"; [ "$pid" != 0 ] || { echo "cuzk.service is not running"; return 1; }
  in_ct grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' "/proc/$pid/status"
  in_ct grep -Eq '^Seccomp:[[:space:]]+2$' "/proc/$pid/status" || return 1
  mapfile -t props < <(unit_sandbox_props)
  [ ${#props[@]} -gt 40 ] || { echo "too few sandbox settings read: ${props[*]}"; return 1; }
  echo "transient service with cuzk.service's $(( ${#props[@]} / 2 )) sandbox settings:"
  local run=(systemd-run --quiet --wait --pipe --collect "${props[@]}")
  expect_failure 'mmap\(prot=7\): Operation not permitted' in_ct "${run[@]}" perl -e "$MMAP_PROBE" 7 || return 1
  expect_output 'mmap\(prot=3\): mapped' in_ct "${run[@]}" perl -e "$MMAP_PROBE" 3 || return 1
  expect_output 'mmap\(prot=7\): mapped' in_ct "${run[@]}" -p MemoryDenyWriteExecute=no perl -e "$MMAP_PROBE" 7
}
check "MemoryDenyWriteExecute=yes: cuzkd under seccomp; W+X mmap refused (EPERM) under the unit's sandbox" mdwe_holds

echo "--- cuzk.service journal (last 15 lines) ---"
in_ct journalctl -u cuzk.service -u cuzk.socket --no-pager -o short-monotonic | tail -n 15
echo "VM test ($ACCEL): checks $(( $(date +%s) - T_CHECKS ))s, total $(elapsed)"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
