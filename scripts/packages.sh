# Sourced by scripts/test.sh and scripts/run.sh (not run on its own).
#
# Makes sure the software GPU stack the tests and the demo run on is installed, so that no backend test
# silently skips for want of a driver:
#   mesa-vulkan-drivers + libvulkan1            lavapipe, the Vulkan adapter (subgroup path)
#   libegl1 + libegl-mesa0 + libgl1-mesa-dri    llvmpipe through EGL, the GL adapter (portable path)
# A missing Vulkan loader makes wgpu fall back to GL silently, and a missing DRI package makes the GL
# adapter vanish silently: hence all five. Idempotent: dpkg is asked first, and `apt-get update` runs
# only when something is missing. Also makes sure cargo is on PATH.

BITSPARSE_PACKAGES=(mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri)

bitsparse_ensure_packages() {
    if ! command -v dpkg >/dev/null 2>&1; then
        echo "note: not a Debian system (no dpkg): install lavapipe (Mesa Vulkan) and Mesa EGL/GL yourself" >&2
        return 0
    fi
    local missing=() p
    for p in "${BITSPARSE_PACKAGES[@]}"; do
        # `dpkg -s` also lists removed-but-configured packages; require the installed state.
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            echo "error: missing packages: ${missing[*]}; run as root (or with passwordless sudo) to install them" >&2
            return 1
        fi
    fi
    echo "installing: ${missing[*]}" >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

bitsparse_ensure_cargo() {
    if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        echo "error: cargo not found: install Rust >= 1.85 (https://rustup.rs)" >&2
        return 1
    fi
}

bitsparse_setup() {
    bitsparse_ensure_packages
    bitsparse_ensure_cargo
    # Mesa's EGL/Vulkan loaders warn without it; /tmp is enough for headless compute.
    export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
}
