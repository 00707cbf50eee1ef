#!/usr/bin/env bash
# Builds MrBayes 3.2.7a with MPI, for measuring the speed-up MrBayes gets from `mpirun` (issue 18's
# all-cores target); ../shared/peers has no MPI build, and Debian's `mrbayes-mpi` 3.2.7a-6 binary is
# not linked to MPI (`ldd` shows no libmpi; `mpirun -np 2` runs two independent copies).
#
#   bash benchmarks/build_mb_mpi.sh OUT [PEERS_DIR]
#
# Needs: the `mpich` extra in the Python that runs it (`pip install -e '.[mpich]'`: its mpicc,
# mpi.h, libmpi and Hydra's mpiexec), a C compiler, and Debian's package sources reachable by
# apt-get (the MrBayes source is Debian's orig tarball, BEAGLE's headers come from libhmsbeagle-dev;
# `apt-get source` needs a deb-src line, which this script adds to a private apt configuration).
# Built like ../shared/peers/bin/mb: single-precision CLFlt, MrBayes' SSE code (no AVX/FMA),
# -march=x86-64-v2, linked to the peers' BEAGLE 4.0.1 (libhmsbeagle.so.1) through RUNPATH
# $ORIGIN/../lib. OUT gets bin/mb-mpi, bin/mpiexec (Hydra) and lib/ (BEAGLE + MPICH), self-contained,
# so that it can travel to the GPU machine:
#   mpiexec -n 8 OUT/bin/mb-mpi file.nex
set -euo pipefail
out=$(realpath -m "${1:?usage: build_mb_mpi.sh OUT [PEERS_DIR]}")
peers=$(realpath "${2:-$(dirname "$0")/../../shared/peers}")
py=${PYTHON:-python3}
prefix=$("$py" -c 'import sys; print(sys.prefix)')
[ -x "$prefix/bin/mpicc" ] || { echo "build_mb_mpi.sh: no mpicc in $prefix/bin (install the mpich extra)" >&2; exit 2; }
work=$(mktemp -d /tmp/mb-mpi-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Debian's sources, through a private sources list (the machine's apt configuration is left alone).
mkdir -p apt/lists/partial apt/archives/partial
sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > apt/src.sources
opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=/dev/null
      -o Dir::Etc::sourcelist="$work/apt/src.sources" -o Dir::State::Lists="$work/apt/lists")
apt-get "${opts[@]}" update -qq
apt-get "${opts[@]}" source --download-only -qq mrbayes=3.2.7a-6 2>/dev/null || true
[ -f mrbayes_3.2.7a.orig.tar.gz ] || { echo "build_mb_mpi.sh: could not fetch MrBayes' source" >&2; exit 1; }
apt-get download -qq libhmsbeagle-dev
dpkg -x libhmsbeagle-dev_*.deb beagle
tar xzf mrbayes_3.2.7a.orig.tar.gz

cd MrBayes-3.2.7a
export PATH="$prefix/bin:$PATH"
./configure -q --with-mpi --enable-sse --disable-avx --disable-fma --without-readline MPICC=mpicc \
    CFLAGS="-O3 -march=x86-64-v2" BEAGLE_CFLAGS="-I$work/beagle/usr/include/libhmsbeagle-1" \
    BEAGLE_LIBS="-L$peers/lib -l:libhmsbeagle.so.1" >/dev/null
grep -q '^#define MPI_ENABLED 1' src/config.h || { echo "build_mb_mpi.sh: configure did not enable MPI" >&2; exit 1; }
# configure adds every SIMD flag of the build machine (-mavx2 ...); keep the peers' SSE-only build
make -s -j"$(nproc)" SIMD_FLAGS="-msse -msse2 -msse3" CPUEXT_FLAGS="" LDFLAGS='-Wl,-rpath,\$$ORIGIN/../lib' >/dev/null

mkdir -p "$out/bin" "$out/lib"
cp src/mb "$out/bin/mb-mpi"
cp "$peers"/lib/libhmsbeagle.so.1 "$peers"/lib/libhmsbeagle-cpu*.so.* "$out/lib/"
cp "$prefix/lib/libmpi.so.12" "$out/lib/"
cp -r "$prefix/lib/mpich" "$out/lib/"
cp "$prefix/bin/mpiexec.hydra" "$out/bin/mpiexec"
cp "$prefix/bin/hydra_pmi_proxy" "$out/bin/"
"$out/bin/mb-mpi" -v 2>/dev/null | grep -m1 -i version || true
echo "built $out/bin/mb-mpi (run: $out/bin/mpiexec -n P $out/bin/mb-mpi file.nex)"
