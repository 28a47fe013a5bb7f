// The map between Hugging Face's GPT-2 tensor names and attnscope's Weights fields.
//
// One table drives loading, synthetic weights and `inspect`, so the three cannot disagree.
// Shapes are as the checkpoint stores them (Conv1D weights [in, out]); `transpose` marks the
// ones that attnscope keeps as [out, in].
#pragma once

#include <string>
#include <vector>

#include "models/gpt2/weights.h"

namespace attnscope::gpt2 {

enum class Init { Normal, ScaledNormal, Ones, Zeros };  // how synthetic weights fill it

struct TensorSlot {
  std::string name;  // without the "transformer." prefix
  Shape stored_shape;
  bool transpose = false;
  Init init = Init::Zeros;
  Tensor* destination = nullptr;
  // A matrix read by ops::linear (or the token embedding, which is also the tied LM head): stored
  // in the model's weight dtype (ModelDTypes::weights); every other tensor in its activation dtype.
  bool matrix = false;
};

// Every tensor of `config`, in checkpoint order, each pointing at its field of `weights`
// (which must outlive the returned slots; its layers vector is resized here).
std::vector<TensorSlot> tensor_slots(const Gpt2Config& config, Weights& weights);

// Parameters of `config`, counted as Hugging Face counts them: the tied LM head is the token
// embedding, not a second matrix (124,439,808 for GPT-2 small).
std::int64_t count_parameters(const Gpt2Config& config);

}  // namespace attnscope::gpt2
