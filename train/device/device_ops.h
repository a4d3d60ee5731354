// What a device trainer (device_trainer.h) needs from a device: memory,
// copies and steps on per-slot streams. Two implementations: CUDA
// (train/cuda/cuda_device_ops.h, built where nvcc is found) and the host
// (MakeHostDeviceOps below), which runs the same kernel bodies and step
// sequence (train/device/step_sequence.h) on the CPU so that tests check the
// device trainer's algorithm on machines without a GPU.
//
// Plain C++ (no Abseil): the CUDA side is compiled by nvcc. Calls that can
// fail return an error message, empty on success.
//
// Streams: stream s in [0, streams) orders the calls made on it; calls on
// distinct streams may run concurrently and may be made from distinct
// threads, at most one thread per stream at a time.
#ifndef EMBER_TRAIN_DEVICE_DEVICE_OPS_H_
#define EMBER_TRAIN_DEVICE_DEVICE_OPS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "train/device/kernel_bodies.h"

namespace ember {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // "cuda:0 (NVIDIA H200)", "emulated".
  virtual std::string name() const = 0;
  virtual int streams() const = 0;

  // Device memory; *out is null after an error.
  virtual std::string Alloc(size_t bytes, void** out) = 0;
  virtual void Free(void* p) = 0;
  // Host memory that copies to and from the device at full speed.
  virtual std::string AllocPinned(size_t bytes, void** out) = 0;
  virtual void FreePinned(void* p) = 0;
  // Bytes of device memory held now and at most so far (Alloc'd by this
  // object; library workspaces are not counted).
  virtual size_t bytes_in_use() const = 0;
  virtual size_t peak_bytes() const = 0;

  // Enqueued on `stream`; the host buffer must stay valid until Synchronize.
  virtual std::string CopyToDevice(int stream, void* device, const void* host, size_t bytes) = 0;
  virtual std::string CopyToHost(int stream, void* host, const void* device, size_t bytes) = 0;
  // Enqueues one training step (step_sequence.h).
  virtual std::string Step(int stream, const device::StepShape& shape,
                           const device::StepArgs& args) = 0;
  // Waits for everything enqueued on `stream`.
  virtual std::string Synchronize(int stream) = 0;

  // Timers t in [0, streams()): StartTimer and StopTimer enqueue marks on
  // `stream`; WaitTimer waits for the work enqueued before the stop mark
  // (without touching the stream, which another thread may be capturing
  // into a CUDA graph); after it, TimerSeconds is the device's time
  // between the marks (CUDA events; on the host, the wall time of the
  // calls made between them, which run there and then). One thread per
  // timer at a time.
  virtual std::string StartTimer(int stream, int timer) = 0;
  virtual std::string StopTimer(int stream, int timer) = 0;
  virtual std::string WaitTimer(int timer) = 0;
  virtual std::string TimerSeconds(int timer, double* seconds) = 0;
};

// The host implementation with `streams` streams (each call completes before
// it returns; the device memory is ordinary host memory, kept apart from the
// trainer's host rows so that residency is modelled as on a GPU). With
// skip_steps, Step only zeroes the loss rows and relation gradients, so
// that a benchmark measures everything of a device trainer but the step.
std::unique_ptr<DeviceOps> MakeHostDeviceOps(int streams, bool skip_steps = false);

}  // namespace ember

#endif  // EMBER_TRAIN_DEVICE_DEVICE_OPS_H_
