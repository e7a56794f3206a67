// eval.cuh's kernel run on the host (CUZK_HOST_BUILD): a compiled circuit's constraints
// evaluated at z. Reads from stdin, all little-endian: u64 rows, u64 z_len, u64 dict_len;
// then for each of A, B and C the (rows + 1) u32 row starts, a u64 term count and that many
// u32 columns and u32 coefficient ids; then the dictionary (dict_len Fr elements) and z
// (z_len), 32 bytes each as blstrs Scalars lie in memory. Writes a, b and c (rows Fr
// elements each) and the u32 first row with a * b != c (0xFFFFFFFF: none) to stdout.
//
//   g++ -O2 -std=c++17 -DCUZK_HOST_BUILD -I kernels kernels/host/eval_check.cpp
//
// crates/cuzk-gpu/tests/kernels_on_host.rs feeds it CompiledCircuit::parts and compares its
// output with CompiledCircuit::evaluate_checked, byte for byte. Malformed input (short, a row
// start past the terms or below the one before, a column outside z, a coefficient id outside
// the dictionary) is refused with a message and exit code 1 rather than read out of bounds.
#include "../eval.cuh"

#include <cstdio>
#include <new>
#include <vector>

using namespace cuzk;

namespace {

// One matrix in compressed rows, as the kernel reads it.
struct matrix {
    std::vector<uint32_t> start, cols, coeffs;
};

template <class T>
bool read(T* out, uint64_t count) {
    return fread(out, sizeof(T), count, stdin) == count;
}

// Reads one matrix and checks that every index it holds is in bounds, so that the kernel,
// which trusts its input as the device does, never reads outside the arrays.
bool read_matrix(const char* name, uint64_t rows, uint64_t z_len, uint64_t dict_len, matrix& m) {
    m.start.resize(rows + 1);
    uint64_t terms = 0;
    if (!read(m.start.data(), rows + 1) || !read(&terms, 1)) {
        fprintf(stderr, "short input: the row starts of %s\n", name);
        return false;
    }
    // Row starts are u32 on the device, so the terms of one matrix must fit.
    if (terms > 0xFFFFFFFFull) {
        fprintf(stderr, "%s has %llu terms, more than u32 row starts address\n", name, (unsigned long long)terms);
        return false;
    }
    for (uint64_t r = 0; r <= rows; r++) {
        if (m.start[r] > terms || (r > 0 && m.start[r] < m.start[r - 1])) {
            fprintf(stderr, "%s: row start %llu (%u) is past the %llu terms or below the one before\n", name,
                    (unsigned long long)r, m.start[r], (unsigned long long)terms);
            return false;
        }
    }
    m.cols.resize(terms);
    m.coeffs.resize(terms);
    if (!read(m.cols.data(), terms) || !read(m.coeffs.data(), terms)) {
        fprintf(stderr, "short input: the %llu terms of %s\n", (unsigned long long)terms, name);
        return false;
    }
    for (uint64_t t = 0; t < terms; t++) {
        if (m.cols[t] >= z_len) {
            fprintf(stderr, "%s: term %llu reads column %u of a z of %llu\n", name, (unsigned long long)t, m.cols[t],
                    (unsigned long long)z_len);
            return false;
        }
        if (m.coeffs[t] >= dict_len) {
            fprintf(stderr, "%s: term %llu has coefficient id %u of a dictionary of %llu\n", name,
                    (unsigned long long)t, m.coeffs[t], (unsigned long long)dict_len);
            return false;
        }
    }
    return true;
}

int run() {
    uint64_t head[3];
    if (!read(head, 3)) {
        fprintf(stderr, "short input: the header (rows, z_len, dict_len)\n");
        return 1;
    }
    const uint64_t rows = head[0], z_len = head[1], dict_len = head[2];
    // The kernel counts rows in u32, and columns and ids are u32: anything larger cannot
    // come from a circuit the device evaluates.
    if (rows > 0xFFFFFFFFull || z_len > 0x100000000ull || dict_len > 0x100000000ull) {
        fprintf(stderr, "rows %llu, z_len %llu or dict_len %llu out of the kernel's u32 range\n",
                (unsigned long long)rows, (unsigned long long)z_len, (unsigned long long)dict_len);
        return 1;
    }
    static_assert(sizeof(fr_t) == 32, "blstrs Scalar's layout");
    matrix m[3];
    const char* names[3] = {"A", "B", "C"};
    for (int k = 0; k < 3; k++)
        if (!read_matrix(names[k], rows, z_len, dict_len, m[k])) return 1;
    std::vector<fr_t> dictionary(dict_len), z(z_len);
    if (!read(dictionary.data(), dict_len) || !read(z.data(), z_len)) {
        fprintf(stderr, "short input: the dictionary (%llu) and z (%llu)\n", (unsigned long long)dict_len,
                (unsigned long long)z_len);
        return 1;
    }
    std::vector<fr_t> a(rows), b(rows), c(rows);
    uint32_t first_bad = 0xFFFFFFFFu;
    cuzk_host_launch(rows, 64, [&] {
        fr_eval_constraints(m[0].start.data(), m[0].cols.data(), m[0].coeffs.data(), m[1].start.data(),
                            m[1].cols.data(), m[1].coeffs.data(), m[2].start.data(), m[2].cols.data(),
                            m[2].coeffs.data(), dictionary.data(), z.data(), (uint32_t)rows, a.data(), b.data(),
                            c.data(), &first_bad);
    });
    if (fwrite(a.data(), sizeof(fr_t), rows, stdout) != rows || fwrite(b.data(), sizeof(fr_t), rows, stdout) != rows ||
        fwrite(c.data(), sizeof(fr_t), rows, stdout) != rows || fwrite(&first_bad, sizeof first_bad, 1, stdout) != 1) {
        fprintf(stderr, "short write to stdout\n");
        return 1;
    }
    return 0;
}

} // namespace

int main() {
    // Counts come from the input, so an allocation may fail; say so instead of aborting.
    try {
        return run();
    } catch (const std::bad_alloc&) {
        fprintf(stderr, "out of memory for the sizes the input gives\n");
        return 1;
    }
}
