// optpatch's stand-in for the headers a C++/CUDA file includes.
//
// optpatch parses each file alone, with -nostdinc and no torch or CUDA
// headers (milliseconds instead of 12-18 s a file). Without declarations,
// `int64_t`, `std::vector<at::Tensor>` or `torch::from_blob` are unknown and
// the declarations that use them drop out of the AST. This header declares
// the names extension code uses most, so that such code parses; it is
// force-included before the file and never compiled into anything.
//
// Three promises keep it honest (docs/cpp-frontend.md):
// - A call to a function declared here is never by itself evidence of a
//   run-time value; only what the call is given can be.
// - A member function declared here without `constexpr` reads its object's
//   run-time state; where that may not hold (`std::array::size`), it is
//   declared `constexpr`, so calling it on a run-time object proves nothing.
// - Everything optpatch's own rewrites introduce is declared, so a rewritten
//   file parses with no error that the original did not have.

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __grid_constant__
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef long ssize_t;
#define NULL nullptr

// CUDA runtime.
struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;
struct CUstream_st;
typedef CUstream_st* cudaStream_t;
struct CUevent_st;
typedef CUevent_st* cudaEvent_t;
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
// What host code reads of a device's properties (launch sizes): run-time values, never constants.
struct cudaDeviceProp {
  char name[256];
  int major, minor;
  int multiProcessorCount;
  int maxThreadsPerBlock;
  int maxThreadsPerMultiProcessor;
  int warpSize;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  size_t sharedMemPerMultiprocessor;
  size_t totalGlobalMem;
  int regsPerBlock;
  int l2CacheSize;
};
typedef cudaError_t cudaError;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream = 0);
cudaError_t cudaMalloc(void** ptr, size_t size);
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
const char* cudaGetErrorString(cudaError_t error);
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared = 0, void* stream = 0);
// What clang calls for `<<<...>>>` when it takes the CUDA version for an old one (no CUDA installation seen).
extern "C" cudaError_t cudaConfigureCall(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = 0);
__device__ int atomicAdd(int* address, int value);
__device__ unsigned atomicAdd(unsigned* address, unsigned value);
__device__ float atomicAdd(float* address, float value);
__device__ double atomicAdd(double* address, double value);
__device__ int atomicMax(int* address, int value);
__device__ int atomicMin(int* address, int value);
__device__ int atomicExch(int* address, int value);
__device__ int atomicCAS(int* address, int compare, int value);
struct __half { unsigned short x; };
struct __half2 { __half x, y; };
struct __nv_bfloat16 { unsigned short x; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
struct char2 { signed char x, y; };
struct char4 { signed char x, y, z, w; };
struct uchar4 { unsigned char x, y, z, w; };
struct short2 { short x, y; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct float2 { float x, y; };
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
struct longlong2 { long long x, y; };

// The C library.
extern "C" {
void* memcpy(void* dst, const void* src, size_t count);
void* memset(void* dst, int value, size_t count);
int memcmp(const void* a, const void* b, size_t count);
size_t strlen(const char* text);
void* malloc(size_t size);
void* calloc(size_t count, size_t size);
void free(void* ptr);
void* memmove(void* dst, const void* src, size_t count);
char* strcpy(char* dst, const char* src);
char* strncpy(char* dst, const char* src, size_t count);
char* strcat(char* dst, const char* src);
int strcmp(const char* a, const char* b);
int strncmp(const char* a, const char* b, size_t count);
const char* strchr(const char* text, int character);
const char* strstr(const char* text, const char* part);
int atoi(const char* text);
long atol(const char* text);
long strtol(const char* text, char** end, int base);
double atof(const char* text);
char* getenv(const char* name);
void abort();
void exit(int status);
typedef struct FILE FILE;
extern FILE* stdout;
extern FILE* stderr;
int printf(const char* format, ...);
int fprintf(FILE* stream, const char* format, ...);
int sprintf(char* buffer, const char* format, ...);
int snprintf(char* buffer, size_t size, const char* format, ...);
int puts(const char* text);
int fputs(const char* text, FILE* stream);
int fflush(FILE* stream);
size_t fwrite(const void* data, size_t size, size_t count, FILE* stream);
size_t fread(void* data, size_t size, size_t count, FILE* stream);
FILE* fopen(const char* path, const char* mode);
int fclose(FILE* stream);
void qsort(void* base, size_t count, size_t size, int (*compare)(const void*, const void*));
// The math library, on both sides (CUDA's math functions are host and device).
__host__ __device__ float fabsf(float x);
__host__ __device__ double fabs(double x);
__host__ __device__ float sqrtf(float x);
__host__ __device__ double sqrt(double x);
__host__ __device__ float expf(float x);
__host__ __device__ double exp(double x);
__host__ __device__ float logf(float x);
__host__ __device__ double log(double x);
__host__ __device__ float powf(float x, float y);
__host__ __device__ double pow(double x, double y);
__host__ __device__ float fmaxf(float a, float b);
__host__ __device__ float fminf(float a, float b);
__host__ __device__ double ceil(double x);
__host__ __device__ double floor(double x);
}

namespace std {
using ::int8_t;
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::uint8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::size_t;
using ::ptrdiff_t;
using ::intptr_t;
using ::uintptr_t;
using ::memcpy;
using ::memset;
using ::memmove;
using ::memcmp;
using ::strlen;
using ::strcpy;
using ::strncpy;
using ::strcmp;
using ::malloc;
using ::free;
using ::printf;
using ::fprintf;
using ::sprintf;
using ::snprintf;
using ::puts;
using ::fputs;
using ::fflush;
using ::fwrite;
using ::fread;
using ::abort;
using ::exit;
using ::getenv;
using ::atoi;
using ::qsort;
using ::fabs;
using ::sqrt;
using ::exp;
using ::log;
using ::pow;
using ::ceil;
using ::floor;
typedef decltype(nullptr) nullptr_t;

template <class E>
class initializer_list {
  const E* first_;
  size_t size_;

 public:
  constexpr initializer_list() noexcept : first_(nullptr), size_(0) {}
  constexpr size_t size() const noexcept { return size_; }
  constexpr const E* begin() const noexcept { return first_; }
  constexpr const E* end() const noexcept { return first_ + size_; }
};

template <class T>
class vector {
 public:
  typedef T value_type;
  typedef size_t size_type;
  vector();
  explicit vector(size_t count);
  vector(size_t count, const T& value);
  vector(initializer_list<T> values);
  template <class It>
  vector(It first, It last);
  T* data();
  const T* data() const;
  size_t size() const;
  bool empty() const;
  T& operator[](size_t index);
  const T& operator[](size_t index) const;
  T& at(size_t index);
  T& front();
  T& back();
  T* begin();
  T* end();
  const T* begin() const;
  const T* end() const;
  void push_back(const T& value);
  template <class... A>
  T& emplace_back(A&&... args);
  void resize(size_t count);
  void reserve(size_t count);
  void clear();
};

template <class T, size_t N>
struct array {
  T elements_[N];
  constexpr T* data() { return elements_; }
  constexpr size_t size() const { return N; }
  constexpr T& operator[](size_t index) { return elements_[index]; }
  constexpr const T& operator[](size_t index) const { return elements_[index]; }
};

class string {
 public:
  string();
  string(const char* text);
  const char* c_str() const;
  size_t size() const;
  string operator+(const string& other) const;
};
string to_string(long value);

template <class A, class B>
struct pair {
  A first;
  B second;
};
template <class... T>
class tuple {
 public:
  tuple();
  tuple(const T&... values);
};
template <class... T>
tuple<T...> make_tuple(const T&... values);
template <class T>
class optional {
 public:
  optional();
  optional(const T& value);
  bool has_value() const;
  T& value();
  const T& value() const;
  template <class U>
  T value_or(const U& fallback) const;
  T& operator*();
  const T& operator*() const;
  T* operator->();
  const T* operator->() const;
  explicit operator bool() const;
};
template <class T>
optional<T> make_optional(const T& value);
template <class T>
class unique_ptr {
 public:
  T* get() const;
  T* operator->() const;
};
template <class T>
class shared_ptr {
 public:
  T* get() const;
  T* operator->() const;
};
template <class T>
T&& move(T& value);
// Algorithms a buffer is filled, copied or reduced with (`std::fill(buf, buf + n, 0)`).
template <class It, class T>
void fill(It first, It last, const T& value);
template <class It, class N, class T>
It fill_n(It first, N count, const T& value);
template <class In, class Out>
Out copy(In first, In last, Out out);
template <class In, class N, class Out>
Out copy_n(In first, N count, Out out);
template <class It>
void sort(It first, It last);
template <class It, class Compare>
void sort(It first, It last, Compare compare);
template <class It, class T>
T accumulate(It first, It last, T init);
template <class It, class T>
void iota(It first, It last, T value);
template <class It>
It max_element(It first, It last);
template <class It>
It min_element(It first, It last);
template <class T>
void swap(T& a, T& b);
template <class T>
constexpr const T& min(const T& a, const T& b);
template <class T>
constexpr const T& max(const T& a, const T& b);
class runtime_error {
 public:
  explicit runtime_error(const char* what);
  explicit runtime_error(const string& what);
};
class invalid_argument {
 public:
  explicit invalid_argument(const char* what);
};
}  // namespace std

// c10, ATen and the C++ frontend.
namespace c10 {
struct Half {
  unsigned short x;
  Half();
  Half(float value);
  operator float() const;
};
struct BFloat16 {
  unsigned short x;
  BFloat16();
  BFloat16(float value);
  operator float() const;
};
enum class ScalarType : signed char {
  Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf, ComplexFloat,
  ComplexDouble, Bool, QInt8, QUInt8, QInt32, BFloat16, UInt16, UInt32, UInt64,
  Float8_e5m2, Float8_e4m3fn, Undefined
};
enum class DeviceType : signed char { CPU = 0, CUDA = 1 };
enum class Layout : signed char { Strided, Sparse };
enum class MemoryFormat : signed char { Contiguous, Preserve, ChannelsLast };
typedef signed char DeviceIndex;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kUInt8 = ScalarType::Byte;
constexpr ScalarType kInt8 = ScalarType::Char;
constexpr ScalarType kInt16 = ScalarType::Short;
constexpr ScalarType kInt32 = ScalarType::Int;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr ScalarType kUInt16 = ScalarType::UInt16;
constexpr ScalarType kUInt32 = ScalarType::UInt32;
constexpr ScalarType kUInt64 = ScalarType::UInt64;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kFloat64 = ScalarType::Double;
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr Layout kStrided = Layout::Strided;
struct Device {
  Device(DeviceType type, DeviceIndex index = -1);
  DeviceType type() const;
  DeviceIndex index() const;
  bool has_index() const;
  bool is_cuda() const;
  bool is_cpu() const;
  bool operator==(const Device& other) const;
  bool operator!=(const Device& other) const;
};
class IntArrayRef {
 public:
  IntArrayRef();
  IntArrayRef(const int64_t& value);
  IntArrayRef(std::initializer_list<int64_t> values);
  IntArrayRef(const std::vector<int64_t>& values);
  const int64_t* data() const;
  size_t size() const;
  int64_t operator[](size_t index) const;
  const int64_t* begin() const;
  const int64_t* end() const;
  bool empty() const;
  std::vector<int64_t> vec() const;
  bool operator==(IntArrayRef other) const;
  bool operator!=(IntArrayRef other) const;
};
template <class T>
using optional = std::optional<T>;
struct TensorOptions {
  TensorOptions();
  TensorOptions(ScalarType dtype);
  TensorOptions(DeviceType device);
  TensorOptions(Device device);
  TensorOptions dtype(ScalarType dtype) const;
  TensorOptions device(Device device) const;
  TensorOptions device(DeviceType type, DeviceIndex index = -1) const;
  TensorOptions layout(Layout layout) const;
  TensorOptions requires_grad(bool requires_grad) const;
  TensorOptions pinned_memory(bool pinned) const;
  ScalarType dtype() const;
  Device device() const;
};
TensorOptions dtype(ScalarType dtype);
TensorOptions device(Device device);
struct Scalar {
  Scalar(double value);
  Scalar(long value);
  Scalar(int value);
  Scalar(bool value);
};
std::string toString(ScalarType dtype);
}  // namespace c10

namespace at {
using namespace c10;
// Element access as ATen's accessors give it: `a[i][j]` down to a reference to the element.
template <class T>
struct DefaultPtrTraits {
  typedef T* PtrType;
};
template <class T>
struct RestrictPtrTraits {
  typedef T* __restrict__ PtrType;
};
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor<T, N - 1> operator[](int64_t index) const;
  int64_t size(int64_t dim) const;
};
template <class T>
class TensorAccessor<T, 1> {
 public:
  T& operator[](int64_t index) const;
  int64_t size(int64_t dim) const;
};
template <class T, size_t N, template <class U> class PtrTraits = DefaultPtrTraits, class index_t = int64_t>
class GenericPackedTensorAccessor : public TensorAccessor<T, N> {};
template <class T, size_t N, template <class U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <class T, size_t N, template <class U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;
class Tensor {
 public:
  Tensor();
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const;
  template <class T, size_t N, template <class U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const;
  template <class T, size_t N, template <class U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const;
  int64_t size(int64_t dim) const;
  IntArrayRef sizes() const;
  int64_t stride(int64_t dim) const;
  IntArrayRef strides() const;
  int64_t dim() const;
  int64_t ndimension() const;
  int64_t numel() const;
  size_t nbytes() const;
  int64_t element_size() const;
  int64_t storage_offset() const;
  void* data_ptr() const;
  template <class T>
  T* data_ptr() const;
  template <class T>
  T* mutable_data_ptr() const;
  const void* const_data_ptr() const;
  template <class T>
  T item() const;
  ScalarType scalar_type() const;
  ScalarType dtype() const;
  TensorOptions options() const;
  Device device() const;
  int get_device() const;
  bool defined() const;
  bool is_cuda() const;
  bool is_cpu() const;
  bool is_contiguous() const;
  bool requires_grad() const;
  Tensor contiguous() const;
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
  Tensor to(DeviceType device, bool non_blocking = false, bool copy = false) const;
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(TensorOptions options, bool non_blocking = false, bool copy = false) const;
  Tensor cuda() const;
  Tensor cpu() const;
  Tensor clone() const;
  Tensor detach() const;
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor flatten() const;
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor& zero_();
  Tensor& fill_(Scalar value);
  Tensor sum() const;
  Tensor operator[](int64_t index) const;
};
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
Tensor empty_like(const Tensor& other);
Tensor empty_like(const Tensor& other, TensorOptions options);
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor zeros_like(const Tensor& other);
Tensor zeros_like(const Tensor& other, TensorOptions options);
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor& add_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& mul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& mm_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& matmul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
namespace cuda {
class CUDAStream {
 public:
  operator cudaStream_t() const;
  cudaStream_t stream() const;
  Device device() const;
};
CUDAStream getCurrentCUDAStream(DeviceIndex device = -1);
CUDAStream getDefaultCUDAStream(DeviceIndex device = -1);
CUDAStream getStreamFromPool(bool high_priority = false, DeviceIndex device = -1);
DeviceIndex current_device();
cudaDeviceProp* getCurrentDeviceProperties();
cudaDeviceProp* getDeviceProperties(DeviceIndex device);
void setCurrentCUDAStream(CUDAStream stream);
struct CUDAGuard {
  explicit CUDAGuard(Device device);
  explicit CUDAGuard(DeviceIndex index);
};
struct OptionalCUDAGuard {
  OptionalCUDAGuard();
  explicit OptionalCUDAGuard(Device device);
  explicit OptionalCUDAGuard(std::optional<Device> device);
};
struct CUDAStreamGuard {
  explicit CUDAStreamGuard(CUDAStream stream);
};
}  // namespace cuda
}  // namespace at

namespace c10 {
namespace cuda {
using at::cuda::CUDAGuard;
using at::cuda::CUDAStream;
using at::cuda::CUDAStreamGuard;
using at::cuda::getCurrentCUDAStream;
using at::cuda::getStreamFromPool;
using at::cuda::OptionalCUDAGuard;
using at::cuda::setCurrentCUDAStream;
}  // namespace cuda
}  // namespace c10

namespace torch {
using namespace at;
typedef c10::ScalarType Dtype;
}  // namespace torch

namespace optpatch_prelude {
template <class... A>
void check(const A&...);
}  // namespace optpatch_prelude

#define TORCH_CHECK(...) ::optpatch_prelude::check(__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(...) ::optpatch_prelude::check(__VA_ARGS__)
#define AT_ASSERTM(...) ::optpatch_prelude::check(__VA_ARGS__)
#define C10_CUDA_CHECK(expression) ::optpatch_prelude::check(expression)
#define AT_CUDA_CHECK(expression) ::optpatch_prelude::check(expression)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ::optpatch_prelude::check(0)

// ATen's dtype dispatch, as it expands: the lambda runs once, where `scalar_t` names the element type (here
// always float: enough to resolve the body; optpatch writes types as the code spells them).
#define OPTPATCH_DISPATCH_AS(TYPE, NAME, ...) \
  [&] { (void)(TYPE); (void)(NAME); using scalar_t = float; (void)sizeof(scalar_t); return __VA_ARGS__(); }()
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND(S1, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND2(S1, S2, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND3(S1, S2, S3, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_ALL_TYPES_AND(S1, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_ALL_TYPES_AND2(S1, S2, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_ALL_TYPES_AND3(S1, S2, S3, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_INTEGRAL_TYPES_AND(S1, TYPE, NAME, ...) OPTPATCH_DISPATCH_AS(TYPE, NAME, __VA_ARGS__)
