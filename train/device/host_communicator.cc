// DeviceCommunicator on the host: the sums NCCL's all-reduce computes.
#include <algorithm>
#include <vector>

#include "train/device/device_communicator.h"

namespace ember {
namespace {

class HostCommunicator final : public DeviceCommunicator {
 public:
  explicit HostCommunicator(int ranks) : ranks_(ranks) {}
  std::string name() const override { return "host (" + std::to_string(ranks_) + " ranks)"; }
  int ranks() const override { return ranks_; }
  std::string AllReduceSum(float* const* data, size_t count) override {
    sum_.assign(count, 0.0f);
    for (int r = 0; r < ranks_; ++r) {
      for (size_t i = 0; i < count; ++i) sum_[i] += data[r][i];
    }
    for (int r = 0; r < ranks_; ++r) std::copy(sum_.begin(), sum_.end(), data[r]);
    return "";
  }

 private:
  const int ranks_;
  std::vector<float> sum_;
};

}  // namespace

std::unique_ptr<DeviceCommunicator> MakeHostCommunicator(int ranks) {
  return std::make_unique<HostCommunicator>(ranks);
}

}  // namespace ember
