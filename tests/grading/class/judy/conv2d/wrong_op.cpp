// Planted submission (tests/grading): a variant of another operation (conv2d),
// so the gemm assignment finds nothing of hers to grade.
#include "ops/conv2d.hpp"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {}

const Register<ConvProblem> reg{{.name = "judy_wrong_op", .device = Device::cpu, .lesson = 1,
                                 .supports = f32_only<ConvProblem>, .run = run}};

}  // namespace
}  // namespace convlab
