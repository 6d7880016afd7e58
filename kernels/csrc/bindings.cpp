// Python binding of the KV-cache kernels; torch.utils.cpp_extension.load
// defines TORCH_EXTENSION_NAME, so both the original and the rewritten build
// can be loaded side by side under distinct names.
#include <torch/extension.h>

#include "cache_ops.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Paged KV-cache kernels in vLLM's layouts";
  m.def("copy_blocks", &copy_blocks,
        "Copy cache blocks, per mapping pair, in every layer's key and value "
        "cache");
  m.def("swap_blocks", &swap_blocks,
        "Copy cache blocks between GPU and host memory, or within a GPU");
  m.def("reshape_and_cache", &reshape_and_cache,
        "Scatter keys and values into the paged cache layout");
  m.def("reshape_and_cache_flash", &reshape_and_cache_flash,
        "Scatter keys and values into the flash cache layout");
  m.def("gather_cache_flash", &gather_cache_flash,
        "Gather tokens' rows of the flash key cache into a dense tensor");
}
