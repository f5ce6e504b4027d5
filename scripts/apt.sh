# Sourced by the need-*.sh scripts: how they install what a test or a
# benchmark needs on Debian or Ubuntu.

# can_apt reports whether packages may be installed here: running as root
# where apt-get exists.
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

# apt_install installs the packages named by its arguments, quietly.
apt_install() {
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
