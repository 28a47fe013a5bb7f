// attnscope._attnscope: the runtime and its profiler for Python (pybind11). This file is the
// thin C++ half: it holds a model on its device and hands out what the C++ libraries compute.
// The Pythonic half (python/attnscope/__init__.py: argument checks with ValueError/TypeError,
// docstrings, the Profile object, NumPy arrays) wraps it.
//
// Arrays cross as HostArray, an f32 buffer with a shape that NumPy reads through the buffer
// protocol without copying (np.asarray keeps the HostArray, and so the bytes, alive). Logits on
// the CPU are the model's own output tensor (zero-copy); on a GPU they are copied to the host
// once. Every compute call releases the GIL; generate takes it back between tokens to see
// Ctrl-C (PyErr_CheckSignals), which stops the loop with KeyboardInterrupt. attnscope::Error
// becomes attnscope.Error (a RuntimeError) with the same one-line message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/json_grammar.h"
#include "engine/json_schema_masks.h"
#include "models/language_model.h"
#include "ops/attention/registry.h"
#include "profiler/chrome_trace.h"
#include "profiler/device_time.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/generation.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/measure/attention_map.h"
#include "tools/attnscope/measure/attention_timing.h"
#include "tools/attnscope/measure/profile_run.h"

namespace py = pybind11;

namespace attnscope::python {

// f32 values with a shape, readable by NumPy in place: either a host tensor (shared, so the
// model's own logits are not copied; it keeps the Context whose allocator owns its bytes alive,
// so an array may outlive its Model) or values of its own.
class HostArray {
 public:
  HostArray(Tensor tensor, std::vector<std::int64_t> shape, std::shared_ptr<Context> owner)
      : owner_(std::move(owner)), tensor_(std::move(tensor)), shape_(std::move(shape)) {}
  HostArray(std::vector<float> values, std::vector<std::int64_t> shape)
      : values_(std::move(values)), shape_(std::move(shape)) {}

  py::buffer_info buffer() {
    float* data = tensor_.defined() ? tensor_.data<float>() : values_.data();
    std::vector<py::ssize_t> shape(shape_.begin(), shape_.end());
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t stride = sizeof(float);
    for (std::size_t i = shape.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= shape[i];
    }
    return py::buffer_info(data, sizeof(float), py::format_descriptor<float>::format(),
                           static_cast<py::ssize_t>(shape.size()), shape, strides);
  }

 private:
  std::shared_ptr<Context> owner_;  // declared first: released after the tensor
  Tensor tensor_;
  std::vector<float> values_;
  std::vector<std::int64_t> shape_;
};

py::object parse_json(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

class Model {
 public:
  Model(const std::string& spec, const std::string& device, const std::string& dtype,
        const std::string& attention, int threads, const std::string& tokenizer_dir)
      : spec_(spec), tokenizer_dir_(tokenizer_dir) {
    cli::DeviceOptions options{device, dtype, threads};
    py::gil_scoped_release released;
    ctx_ = cli::make_context(options);
    model_ = open_model(spec, *ctx_, 0, parse_dtype(dtype));
    model_->set_attention(attention);
    tokenizer_ = cli::find_tokenizer(tokenizer_dir, spec);
  }

  std::string attention() const {
    py::gil_scoped_release released;
    const std::lock_guard running(running_);
    return std::string(model_->attention().name());
  }
  void set_attention(const std::string& name) {
    py::gil_scoped_release released;
    const std::lock_guard running(running_);
    model_->set_attention(name);
  }

  py::dict config() const {
    const ModelConfig& c = model_->config();
    py::dict d;
    d["model"] = spec_;
    d["vocab_size"] = c.vocab_size;
    d["context_length"] = c.context_length;
    d["d_model"] = c.d_model;
    d["n_layers"] = c.n_layers;
    d["n_heads"] = c.n_heads;
    d["n_kv_heads"] = c.n_kv_heads;
    d["head_dim"] = c.head_dim;
    d["eos_token_id"] = c.eos_token_id();
    d["eos_token_ids"] = c.eos_token_ids;
    d["parameters"] = model_->parameter_count();
    d["device"] = ctx_->describe();
    d["dtype"] = model_->dtype_summary();
    d["threads"] = ctx_->threads();
    return d;
  }

  bool has_tokenizer() const { return tokenizer_.has_value(); }
  std::vector<std::int32_t> encode(const std::string& text, bool add_special_tokens) const {
    return tokenizer().encode(text, add_special_tokens);
  }

  // The text of `conversation_json` ({"messages": [...], "tools": [...]}, as a chat completions
  // request writes it) as the model's chat template renders it (`template_file`'s when given),
  // the assistant's turn opened, or the final message left open, when asked.
  std::string apply_chat_template(const std::string& conversation_json, bool add_generation_prompt,
                                  bool continue_final_message,
                                  const std::string& template_file) const {
    std::string why_none;
    const std::optional<tokenizer::ChatTemplate> chat_template =
        cli::find_chat_template(template_file, tokenizer_dir_, spec_, tokenizer_, why_none);
    check(chat_template.has_value() && why_none.empty(), "chat template", why_none);
    tokenizer::jinja::Value request;
    try {
      request = tokenizer::jinja::Value::parse(conversation_json);
    } catch (const nlohmann::json::exception& e) {
      throw Error("messages", std::string("not JSON: ") + e.what());
    }
    check(!(add_generation_prompt && continue_final_message), "continue_final_message",
          "cannot be set with add_generation_prompt");
    return chat_template->render(
        tokenizer::read_conversation(request),
        tokenizer::chat_ending(add_generation_prompt, continue_final_message));
  }
  // Bytes that are not UTF-8 (a token cut mid-character) become U+FFFD, as in transformers'
  // decode().
  py::str decode(const std::vector<std::int32_t>& ids) const {
    const std::string text = tokenizer().decode(ids);
    PyObject* decoded =
        PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    if (decoded == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(decoded);
  }

  // f32 logits [T, V] of every position of `ids`, from an empty cache.
  HostArray logits(const std::vector<std::int32_t>& ids) {
    const auto length = static_cast<std::int64_t>(ids.size());
    Tensor host;
    {
      py::gil_scoped_release released;
      const std::lock_guard running(running_);
      prepare(length, length, true);
      KVCache cache = model_->new_cache(*ctx_, 1, length);
      host = to_host(*ctx_, model_->forward(*ctx_, ids, 1, cache, true));
    }
    return HostArray(host, {length, model_->config().vocab_size}, ctx_);
  }

  // The decode loop of `attnscope generate` (cli/generation.h); with `keep_logits` also the
  // f32 logits [new tokens, V] each token was chosen from, as generate --logits-out saves them.
  // Penalties and JSON mode pick on the host (engine/token_picker.h); JSON mode's mask of the
  // vocabulary is built on its first use and kept.
  py::dict generate(const std::vector<std::int32_t>& prompt, std::int64_t max_new_tokens,
                    const SamplingOptions& sampling, bool ignore_eos, bool keep_logits,
                    float presence_penalty, float frequency_penalty,
                    const std::vector<std::pair<std::int32_t, float>>& logit_bias,
                    const std::string& json_schema) {
    cli::GenerationOptions options;
    options.max_new_tokens = max_new_tokens;
    options.sampling = sampling;
    options.ignore_eos = ignore_eos;
    validate_sampling(options.sampling);
    options.adjustments = {presence_penalty, frequency_penalty, logit_bias};
    const std::string why = options.adjustments.refusal(model_->config().vocab_size);
    check(why.empty(), "generate", why);
    if (!json_schema.empty()) (void)tokenizer();  // JSON needs the vocabulary's text
    const auto length = static_cast<std::int64_t>(prompt.size());
    const std::int64_t positions = length + std::max<std::int64_t>(max_new_tokens - 1, 0);
    const std::int64_t vocab = model_->config().vocab_size;
    cli::Generation generation;
    std::vector<float> logits;
    auto on_token = [&](std::int32_t, const Tensor& step_logits) {
      if (keep_logits) {
        const Tensor host = to_host(*ctx_, step_logits);
        logits.insert(logits.end(), host.data<float>(), host.data<float>() + vocab);
      }
      py::gil_scoped_acquire acquired;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
    {
      py::gil_scoped_release released;
      const std::lock_guard running(running_);
      if (!json_schema.empty()) {
        if (!schema_masks_) schema_masks_.emplace(tokenizer().vocabulary(), model_->config());
        try {
          options.grammar_mask = schema_masks_->mask(json_schema);
        } catch (const Error& e) {
          throw py::value_error(e.what());
        }
      }
      prepare(positions, length, false);
      KVCache cache = model_->new_cache(*ctx_, 1, positions);
      StepRunner runner;
      generation = cli::generate_tokens(*ctx_, *model_, cache, runner, prompt, options, on_token);
    }
    py::dict d;
    if (keep_logits) {
      const auto rows = static_cast<std::int64_t>(generation.generated.size());
      d["logits"] = HostArray(std::move(logits), {rows, vocab});
    }
    d["ids"] = generation.generated;
    d["stop_reason"] = generation.stop_reason;
    d["prefill_seconds"] = generation.prefill_seconds;
    d["decode_seconds"] = generation.decode_seconds;
    d["decode_steps"] = generation.decode_steps;
    return d;
  }

  // The softmax probabilities [layers, heads, T, T] of `ids` (cli::AttentionMapRecorder: the
  // eager backends' own, flash's recomputed from its q and k), and whether they were recomputed.
  py::tuple attention_maps(const std::vector<std::int32_t>& ids,
                           const std::vector<std::int64_t>& layers,
                           const std::vector<std::int64_t>& heads) {
    const auto length = static_cast<std::int64_t>(ids.size());
    cli::AttentionMapRecorder recorder(model_->config(), {"", layers, heads},
                                       cli::AttentionMapSteps::All);
    {
      py::gil_scoped_release released;
      const std::lock_guard running(running_);
      prepare(length, length, false);
      KVCache cache = model_->new_cache(*ctx_, 1, length);
      ctx_->set_attention_tap(&recorder);
      try {
        model_->forward(*ctx_, ids, 1, cache);
      } catch (...) {
        ctx_->set_attention_tap(nullptr);
        throw;
      }
      ctx_->set_attention_tap(nullptr);
    }
    return py::make_tuple(HostArray(recorder.values(), recorder.shape()), recorder.recomputed());
  }

  // A profiled prefill and decode steps (measure/profile_run.h): the summary table's rows, the
  // steps with the cost model's predictions and attention per layer, and the Chrome trace, each
  // as the JSON the command line writes.
  py::dict profile(std::int64_t prompt_len, std::int64_t gen, std::int64_t batch) {
    cli::ProfiledRun run;
    std::string trace_text;
    nlohmann::json summary, steps = nlohmann::json::array();
    {
      py::gil_scoped_release released;
      const std::lock_guard running(running_);
      cli::ModelRunOptions options;
      options.batch = batch;
      // 0: the command line's default, 128 or fewer when the context holds less beside gen.
      options.prompt_len = prompt_len > 0
                               ? prompt_len
                               : std::min<std::int64_t>(128, model_->config().context_length -
                                                                 cli::decode_steps_run(gen));
      options.gen = gen;
      options.names = {"batch", "prompt_len", "gen"};
      run = cli::profile_model(*ctx_, *model_, options);
      const profiler::Trace& trace = run.tracer->trace();
      const auto rows = profiler::summarize(trace.events, profiler::SortKey::Total);
      summary = profiler::summary_json(rows, profiler::wall_ns(trace.events), run.peak_bytes,
                                       profiler::device_wall_ns(trace.events),
                                       profiler::summarize_kernels(trace));
      for (const cli::StepRecord& step : run.steps) {
        nlohmann::json entry = {{"phase", step.phase},
                                {"q_len", step.q_len},
                                {"kv_len", step.kv_len},
                                {"profiled", step.profiled},
                                {"wall_ms", step.wall_ms}};
        if (step.profiled) {
          entry["attention_ms"] = step.attention_ms;
          entry["attention_calls"] = step.attention_calls;
          entry["predicted"] = {{"steps", step.expected.steps},
                                {"temporary_bytes", step.expected.temporary_bytes},
                                {"flops", step.expected.flops},
                                {"bytes", step.expected.bytes}};
          entry["observed"] = {{"steps_min", step.steps_observed_min},
                               {"steps_max", step.steps_observed_max},
                               {"temporary_bytes", step.temporary_bytes}};
          entry["attention_by_layer"] = profiler::layer_times_json(
              profiler::times_by_layer(trace.events, step.first_event, step.end_event));
        }
        steps.push_back(entry);
      }
      std::ostringstream text;
      profiler::write_chrome_trace(
          trace, "attnscope " + spec_ + " attention " + std::string(model_->attention().name()),
          text);
      trace_text = text.str();
    }
    py::dict d;
    d["summary"] = parse_json(summary);
    d["steps"] = parse_json(steps);
    d["trace"] = py::module_::import("json").attr("loads")(trace_text);
    return d;
  }

 private:
  const cli::TextTokenizer& tokenizer() const {
    check(tokenizer_.has_value(), "tokenizer",
          "no tokenizer for " + spec_ +
              ": pass tokenizer=DIR (vocab.json + merges.txt, or "
              "tokenizer.json) or give token ids");
    return *tokenizer_;
  }

  // The checks every call makes before it allocates: ids of the prompt are checked by forward;
  // positions against the context; memory against the device.
  void prepare(std::int64_t positions, std::int64_t tokens, bool all_positions) const {
    check(tokens >= 1, "ids", "need at least one token id");
    check(positions <= model_->config().context_length, "ids",
          std::to_string(positions) + " positions are more than the context length of " +
              std::to_string(model_->config().context_length));
    model_->require_memory(*ctx_, 1, positions, tokens, all_positions, "ids", "use fewer tokens");
  }

  std::string spec_;
  std::string tokenizer_dir_;
  std::shared_ptr<Context> ctx_;  // shared with the arrays whose bytes its allocator owns
  std::unique_ptr<LanguageModel> model_;
  std::optional<cli::TextTokenizer> tokenizer_;
  std::optional<engine::JsonSchemaMasks> schema_masks_;  // generate's JSON schemas, on first use
  // One call at a time runs the model: its context's scratch memory, attention tap and profiler
  // are the model's own. Python threads wait their turn with the GIL released (taken only after
  // it is released, so a running call may take the GIL back to check for Ctrl-C).
  mutable std::mutex running_;
};

// The attention op alone, as `attnscope bench-attention` times it (measure/attention_timing.h):
// one untimed call of `backend` on random inputs of `shape`, then `reps` timed ones, beside the
// backend's cost model. Throws Error when the backend refuses the shape (its reason).
py::dict bench_attention(const std::string& backend_name, const ops::attention::Shape& shape,
                         const std::string& device, int threads, int reps, std::uint64_t seed) {
  const ops::attention::Backend& backend = ops::attention::find_backend(backend_name);
  std::vector<double> times;
  ops::attention::CostModel cost;
  std::string description;
  {
    py::gil_scoped_release released;
    const std::unique_ptr<Context> ctx =
        cli::make_context({device, std::string(dtype_name(shape.dtype)), threads});
    const std::string refusal = backend.refusal(*ctx, shape);
    check(refusal.empty(), "attention " + backend_name, refusal);
    cost = backend.cost_model(*ctx, shape);
    const ops::attention::Call call = cli::random_attention_call(*ctx, shape, seed);
    cli::time_attention(*ctx, backend, call);  // warm-up
    for (int i = 0; i < reps; ++i) times.push_back(cli::time_attention(*ctx, backend, call));
    description = ctx->describe();
  }
  py::dict d;
  d["backend"] = backend_name;
  d["device"] = description;
  d["times_ms"] = times;
  d["flops"] = cost.flops;
  d["bytes"] = cost.bytes;
  d["temporary_bytes"] = cost.temporary_bytes;
  d["steps"] = cost.steps;
  return d;
}

}  // namespace attnscope::python

PYBIND11_MODULE(_attnscope, m) {
  using namespace attnscope;
  using attnscope::python::HostArray;
  using attnscope::python::Model;
  m.doc() = "attnscope's C++ runtime (use the attnscope package, not this module)";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.attr("JSON_OBJECT_SCHEMA") = std::string(engine::kJsonObjectSchema);  // JSON mode's schema

  m.def("backends", &ops::attention::backend_names, "The --attn names, in the study's order");
  m.def("bench_attention", [](const std::string& backend, std::int64_t batch, std::int64_t heads,
                              std::int64_t kv_heads, std::int64_t seq_len, std::int64_t head_dim,
                              bool decode, const std::string& dtype, const std::string& device,
                              int threads, int reps, std::uint64_t seed, bool bf16_products) {
    ops::attention::Shape shape = {batch,
                                   heads,
                                   kv_heads,
                                   decode ? 1 : seq_len,
                                   seq_len,
                                   head_dim,
                                   cli::parse_attention_dtype(dtype)};
    shape.bf16_products = bf16_products;
    return python::bench_attention(backend, shape, device, threads, reps, seed);
  });

  py::class_<HostArray>(m, "HostArray", py::buffer_protocol()).def_buffer([](HostArray& array) {
    return array.buffer();
  });

  py::class_<SamplingOptions>(m, "SamplingOptions")
      .def(py::init<>())
      .def_readwrite("temperature", &SamplingOptions::temperature)
      .def_readwrite("top_k", &SamplingOptions::top_k)
      .def_readwrite("top_p", &SamplingOptions::top_p)
      .def_readwrite("seed", &SamplingOptions::seed);

  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    int, const std::string&>(),
           py::arg("spec"), py::arg("device"), py::arg("dtype"), py::arg("attn"),
           py::arg("threads"), py::arg("tokenizer"))
      .def_property("attn", &Model::attention, &Model::set_attention)
      .def("config", &Model::config)
      .def("has_tokenizer", &Model::has_tokenizer)
      .def("encode", &Model::encode, py::arg("text"), py::arg("add_special_tokens") = true)
      .def("apply_chat_template", &Model::apply_chat_template)
      .def("decode", &Model::decode)
      .def("logits", &Model::logits)
      .def("generate", &Model::generate)
      .def("attention_maps", &Model::attention_maps)
      .def("profile", &Model::profile);
}
