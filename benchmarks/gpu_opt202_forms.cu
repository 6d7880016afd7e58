// OPT202's forms on a GPU: each function copies a host table to the device the way real launchers do.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#include <vector>

// The classic form: a local vector copied to the device of a tensor, used by a torch op.
torch::Tensor declared(torch::Tensor like, int64_t n) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = 3 * i + 1;
  torch::Tensor table = torch::from_blob(values.data(), {n}, torch::kInt64).to(like.device());
  values[0] = -7;  // the host buffer changes right after the copy: the device must hold the old values
  return table * 2;
}

// Sizes spelled with casts.
torch::Tensor cast_sizes(torch::Tensor like, int64_t n) {
  std::vector<float> values(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) values[i] = 0.25f * i;
  auto table = torch::from_blob(values.data(), {static_cast<int64_t>(values.size()) / 2, (int64_t)2}, torch::kFloat32).to(like.device());
  return table + 1;
}

// A device made in place of the CUDA type and an index.
torch::Tensor made_device(torch::Tensor like, int64_t n) {
  const c10::DeviceIndex index = like.get_device();
  int32_t values[8];
  for (int i = 0; i < 8; ++i) values[i] = static_cast<int32_t>(n * i);
  torch::Tensor table = torch::from_blob(values, {8}, torch::kInt32).to(torch::Device(torch::kCUDA, index));
  return table.sum();
}

// Options held in a local variable.
torch::Tensor options_variable(torch::Tensor like, int64_t n) {
  std::vector<double> values(n, 0.5);
  auto options = torch::TensorOptions().dtype(torch::kFloat64);
  auto table = torch::from_blob(values.data(), {n}, options).to(like.device());
  return table.cumsum(0);
}

// Returned directly.
torch::Tensor returned(torch::Tensor like, int64_t n) {
  std::vector<int64_t> values(n, 5);
  return torch::from_blob(values.data(), {n}, torch::kInt64).to(like.device());
}

// Passed to a torch op.
torch::Tensor argument(torch::Tensor like, int64_t n) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = 1.0f / (i + 1);
  torch::Tensor out = torch::zeros({n}, like.options().dtype(torch::kFloat32));
  out.add_(torch::from_blob(values.data(), {n}, torch::kFloat32).to(like.device()));
  return out;
}
