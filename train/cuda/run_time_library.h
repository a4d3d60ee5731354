// A shared library loaded at run time (dlopen), as the CUDA trainer loads
// cuBLAS and NCCL: the first of several names that loads, and its
// functions by symbol.
#ifndef EMBER_TRAIN_CUDA_RUN_TIME_LIBRARY_H_
#define EMBER_TRAIN_CUDA_RUN_TIME_LIBRARY_H_

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace ember {

class RunTimeLibrary {
 public:
  // The first of `names` that loads; on failure ok() is false and error()
  // says why, naming `what`.
  RunTimeLibrary(const char* what, std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if ((lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) return;
    }
    error_ = std::string("cannot load ") + what + " (" + *names.begin() + "): " + dlerror();
  }
  bool ok() const { return lib_ != nullptr && missing_.empty(); }
  // Why not ok(): the library did not load, or lacks a symbol Find asked for.
  std::string error() const {
    return lib_ == nullptr ? error_ : "the library lacks " + missing_;
  }
  // *fn = the function `symbol` (null, noted for error(), when absent).
  template <class F>
  void Find(F** fn, const char* symbol) {
    *fn = lib_ == nullptr ? nullptr : reinterpret_cast<F*>(dlsym(lib_, symbol));
    if (*fn == nullptr && lib_ != nullptr && missing_.empty()) missing_ = symbol;
  }

 private:
  void* lib_ = nullptr;  // never closed: the functions are kept for the process
  std::string error_, missing_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_CUDA_RUN_TIME_LIBRARY_H_
