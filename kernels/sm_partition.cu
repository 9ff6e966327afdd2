#include "kernels/sm_partition.hpp"

#include <cuda.h>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {
namespace {

// A driver function through the runtime's entry-point query, at the version of the headers built
// against: plumb-validate then loads on machines without a driver, and says what is missing.
template <typename F>
F driver_function(F, const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(name, &fn, CUDA_VERSION, cudaEnableDefault, &found), name);
  if (found != cudaDriverEntryPointSuccess || fn == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + name + " (green contexts need a 12.4 or newer driver)");
  return reinterpret_cast<F>(fn);
}

// The driver API calls green contexts need (the macros in cuda.h map some names to versioned
// symbols; the entry-point query takes the plain name).
struct Driver {
#define PLUMB_DRIVER_FUNCTION(name) decltype(&name) name##_ = driver_function(&name, #name)
  PLUMB_DRIVER_FUNCTION(cuGetErrorString);
  PLUMB_DRIVER_FUNCTION(cuCtxGetCurrent);
  PLUMB_DRIVER_FUNCTION(cuCtxSetCurrent);
  PLUMB_DRIVER_FUNCTION(cuDeviceGet);
  PLUMB_DRIVER_FUNCTION(cuDeviceGetDevResource);
  PLUMB_DRIVER_FUNCTION(cuDevSmResourceSplitByCount);
  PLUMB_DRIVER_FUNCTION(cuDevResourceGenerateDesc);
  PLUMB_DRIVER_FUNCTION(cuGreenCtxCreate);
  PLUMB_DRIVER_FUNCTION(cuGreenCtxDestroy);
  PLUMB_DRIVER_FUNCTION(cuCtxFromGreenCtx);
  PLUMB_DRIVER_FUNCTION(cuGreenCtxStreamCreate);
  PLUMB_DRIVER_FUNCTION(cuStreamDestroy);
#undef PLUMB_DRIVER_FUNCTION

  void check(CUresult status, const std::string& what) const {
    if (status == CUDA_SUCCESS) return;
    const char* text = nullptr;
    cuGetErrorString_(status, &text);
    throw std::runtime_error(what + ": " + (text ? text : "CUDA driver error " + std::to_string(static_cast<int>(status))));
  }
};

const Driver& drv() {
  static const Driver d;
  return d;
}

}  // namespace

SmPartition::SmPartition(int device, int groups, int sms_per_group) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA runtime initialisation");  // makes the primary context current
  const Driver& d = drv();
  CUcontext primary = nullptr;
  d.check(d.cuCtxGetCurrent_(&primary), "cuCtxGetCurrent");
  primary_ = primary;
  CUdevice dev = 0;
  d.check(d.cuDeviceGet_(&dev, device), "cuDeviceGet");
  CUdevResource all{};
  d.check(d.cuDeviceGetDevResource_(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource(SM)");
  std::vector<CUdevResource> parts(static_cast<std::size_t>(groups));
  auto made = static_cast<unsigned>(groups);
  CUdevResource rest{};
  CUresult split = d.cuDevSmResourceSplitByCount_(parts.data(), &made, &all, &rest, 0, static_cast<unsigned>(sms_per_group));
  if (split != CUDA_SUCCESS || made < static_cast<unsigned>(groups))
    throw std::runtime_error("cannot split the GPU's " + std::to_string(all.sm.smCount) + " SMs into " + std::to_string(groups) +
                             " green contexts of " + std::to_string(sms_per_group) + " (minimum partition " +
                             std::to_string(all.sm.minSmPartitionSize) + ", alignment " + std::to_string(all.sm.smCoscheduledAlignment) +
                             "; the driver made " + std::to_string(made) + "); give --sms-per-stage a multiple of the alignment or fewer --stages");
  for (CUdevResource& part : parts) {
    CUdevResourceDesc desc = nullptr;
    d.check(d.cuDevResourceGenerateDesc_(&desc, &part, 1), "cuDevResourceGenerateDesc");
    CUgreenCtx green = nullptr;
    d.check(d.cuGreenCtxCreate_(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
    contexts_.push_back(green);
    CUcontext plain = nullptr;
    d.check(d.cuCtxFromGreenCtx_(&plain, green), "cuCtxFromGreenCtx");
    plain_.push_back(plain);
    CUstream s = nullptr;
    d.check(d.cuGreenCtxStreamCreate_(&s, green, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
    streams_.push_back(s);
    sms_.push_back(static_cast<int>(part.sm.smCount));
  }
}

SmPartition::~SmPartition() {
  const Driver& d = drv();
  for (cudaStream_t s : streams_) d.cuStreamDestroy_(s);
  for (void* g : contexts_) d.cuGreenCtxDestroy_(static_cast<CUgreenCtx>(g));
  d.cuCtxSetCurrent_(static_cast<CUcontext>(primary_));
}

void SmPartition::enter(int group) const {
  drv().check(drv().cuCtxSetCurrent_(static_cast<CUcontext>(plain_[static_cast<std::size_t>(group)])), "cuCtxSetCurrent(green context)");
}

void SmPartition::leave() const { drv().check(drv().cuCtxSetCurrent_(static_cast<CUcontext>(primary_)), "cuCtxSetCurrent(primary)"); }

}  // namespace plumb::kernels
