#include "kernels/gemm_runner.hpp"

#include <cublasLt.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper
// The fp8 scales each on their own 256-byte line, as separately allocated tensors' would be, and up to
// kAlgorithmsTried of the heuristic's algorithms tried in turn, the first that runs kept (cuBLASLt's
// own advice when its first choice refuses the operands at launch). Measured on an H200 (2026-11-26,
// cuBLASLt 13): with the two scales 4 bytes apart in one allocation every fp8 GEMM was refused
// (status 15, not supported); with both changes every one ran. Which of the two it took was not isolated.
constexpr std::size_t kScaleStride = 256;
constexpr int kAlgorithmsTried = 8;

cublasLtHandle_t handle(void* p) { return static_cast<cublasLtHandle_t>(p); }

std::string describe(const GemmCall& g) {
  return std::string(g.fp8 ? "fp8" : "bf16") + " GEMM " + std::to_string(g.m) + "×" + std::to_string(g.n) + "×" + std::to_string(g.k) +
         (g.batch > 1 ? " ×" + std::to_string(g.batch) : "");
}

}  // namespace

struct GemmRunner::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos;  // the heuristic's, best first
  std::size_t chosen = 0;                  // the first of them that ran
  ~Plan() {
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(op);
  }
};

GemmRunner::GemmRunner() {
  cublasLtHandle_t lt = nullptr;
  check(cublasLtCreate(&lt), "cublasLtCreate");
  lt_ = lt;
  kernels::check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc(GEMM workspace)");
  kernels::check(cudaMalloc(&scales_, 2 * kScaleStride), "cudaMalloc(fp8 scales)");
  const float one = 1.0f;
  for (std::size_t i = 0; i < 2; ++i)
    kernels::check(cudaMemcpy(static_cast<char*>(scales_) + i * kScaleStride, &one, sizeof one, cudaMemcpyHostToDevice), "cudaMemcpy(scales)");
}

GemmRunner::~GemmRunner() {
  plans_.clear();
  cudaFree(scales_);
  cudaFree(workspace_);
  cublasLtDestroy(handle(lt_));
}

GemmRunner::Plan& GemmRunner::plan(const GemmCall& g) {
  Key key{g.m, g.n, g.k, g.batch, g.fp8};
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  auto p = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;  // column-major C = Aᵀ·B: "TN"
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb), "set TRANSB");
  if (g.fp8) {
    // One scale per input tensor (1: the inputs are in range), read from device memory as in training.
    const float* a_scale = static_cast<const float*>(scales_);
    const float* b_scale = reinterpret_cast<const float*>(static_cast<const char*>(scales_) + kScaleStride);
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale), "set A scale");
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale), "set B scale");
  }
  const cudaDataType_t in = g.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t type, std::int64_t rows, std::int64_t cols) {
    check(cublasLtMatrixLayoutCreate(l, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), rows), "layout");
    if (g.batch > 1) {
      auto count = static_cast<std::int32_t>(g.batch);
      std::int64_t stride = rows * cols;
      check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch count");
      check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), "batch stride");
    }
  };
  layout(&p->a, in, g.k, g.m);
  layout(&p->b, in, g.k, g.n);
  layout(&p->c, CUDA_R_16BF, g.m, g.n);
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes, sizeof kWorkspaceBytes),
        "set workspace");
  cublasLtMatmulHeuristicResult_t heuristic[kAlgorithmsTried]{};
  int found_algos = 0;
  cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle(lt_), p->op, p->a, p->b, p->c, p->c, pref, kAlgorithmsTried, heuristic, &found_algos);
  cublasLtMatmulPreferenceDestroy(pref);
  check(status, ("cublasLtMatmulAlgoGetHeuristic for the " + describe(g)).c_str());
  if (found_algos == 0) throw std::runtime_error("cuBLASLt has no algorithm for the " + describe(g));
  for (int i = 0; i < found_algos; ++i)
    if (heuristic[i].state == CUBLAS_STATUS_SUCCESS) p->algos.push_back(heuristic[i].algo);
  if (p->algos.empty()) throw std::runtime_error("cuBLASLt has no usable algorithm for the " + describe(g));
  return *plans_.emplace(key, std::move(p)).first->second;
}

void GemmRunner::run(const GemmCall& g, const void* a, const void* b, void* c, cudaStream_t stream) {
  Plan& p = plan(g);
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
  // The plan's chosen algorithm; while it is refused as not supported, the heuristic's next ones.
  for (; p.chosen < p.algos.size(); ++p.chosen) {
    status = cublasLtMatmul(handle(lt_), p.op, &alpha, a, p.a, b, p.b, &beta, c, p.c, c, p.c, &p.algos[p.chosen], workspace_,
                            kWorkspaceBytes, stream);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) break;
  }
  if (p.chosen == p.algos.size()) p.chosen = 0;  // none ran: report, and try them all again next time
  check(status, ("cublasLtMatmul for the " + describe(g) + " (" + std::to_string(p.algos.size()) + " algorithms tried)").c_str());
}

}  // namespace plumb::kernels
