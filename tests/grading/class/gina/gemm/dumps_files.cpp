// Planted submission (tests/grading): correct, but it writes a debugging dump
// outside its outputs (a file in the working folder and one above the class).
// The grader blocks both writes, reports them, and still ranks the result.
#include <cstdio>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  for (int i = 0; i < p.M; ++i)
    for (int j = 0; j < p.N; ++j) C[i * p.N + j] = 0.f;
  for (int i = 0; i < p.M; ++i)
    for (int k = 0; k < p.K; ++k)
      for (int j = 0; j < p.N; ++j) C[i * p.N + j] += A[i * p.K + k] * B[k * p.N + j];
  for (const char* path : {"gina-debug.txt", "../../../../gina-escaped.txt"})
    if (std::FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "C[0] = %g\n", double(C[0]));
      std::fclose(f);
    }
}

const Register<GemmProblem> reg{{.name = "gina_dumps_files", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
