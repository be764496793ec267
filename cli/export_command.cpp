// `batchlab export --db PATH --run ID [--checkpoint final|best|STEP] [--checkpoint-dir DIR]
// [--format pt|safetensors|hf] --out FILE.pt|FILE.safetensors|DIR`: a run's weights as a PyTorch
// state_dict (torch.load + load_state_dict(strict=True) into torchvision's ResNet, with conv1 and
// maxpool replaced where the run used the small stem, or a Hugging Face-named BERT), in torch.save
// or safetensors format, with model.json beside it naming that module; or, for a BERT run, a
// Hugging Face save_pretrained folder (config.json, model.safetensors, the tokenizer) with the card
// inside it. The files are written atomically and together; a path that cannot take them is
// refused before anything else.
// The work is in experiments/tasks/weights_export.h (the weights) and analysis/model_card.h (the
// card); this file parses the arguments, finds the checkpoint folder and prints.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "analysis/model_card.h"
#include "cli/app.h"
#include "cli/args.h"
#include "core/atomic_file.h"
#include "core/config/loader.h"
#include "experiments/tasks/weights_export.h"
#include "models/gpt2_config.h"
#include "sweeps/run_layout.h"

namespace batchlab::cli {

namespace {

constexpr const char* kExportUsage =
    "batchlab export --db PATH --run ID [--checkpoint final|best|STEP] [--checkpoint-dir DIR]\n"
    "                [--format pt|safetensors|hf] --out FILE.pt|FILE.safetensors|DIR\n"
    "\n"
    "Writes a run's weights as a PyTorch state_dict that Python reads with torch.load (or\n"
    "safetensors.torch.load_file) and load_state_dict(strict=True): torchvision's names for\n"
    "resnet18..152, Hugging Face's for BERT and GPT-2.\n"
    "  --format pt           torch.save format (default, unless --out ends in .safetensors)\n"
    "  --format safetensors  the same tensors as a .safetensors file\n"
    "  --format hf           BERT and GPT-2 runs: a Hugging Face save_pretrained folder DIR\n"
    "                        (config.json, model.safetensors, tokenizer.json and its configs,\n"
    "                        batchlab_card.json)\n"
    "                        for transformers' from_pretrained(DIR) and AutoTokenizer\n"
    "A card FILE.json beside it holds the run's config, metrics, git sha and the checkpoint step,\n"
    "and which PyTorch module takes the weights (a ResNet trained with the small stem, as on\n"
    "images of 64 px or less, is torchvision's with conv1 and maxpool replaced).\n"
    "  --checkpoint final    the newest checkpoint: a finished run's final weights (default)\n"
    "  --checkpoint best     best.pt, the weights at the best validation metric (runs with\n"
    "                        data.val_size > 0; see docs/architecture.md)\n"
    "  --checkpoint STEP     the checkpoint written at STEP (the two newest are kept)\n"
    "  --checkpoint-dir DIR  where the run's checkpoints are (default: beside the database, or "
    "the\n"
    "                        run folder of its sweep)\n"
    "The model is rebuilt as training built it, from the run's data set (its sizes).";

namespace fs = std::filesystem;

constexpr const char* kFolderCard = "batchlab_card.json";
constexpr const char* kFolderModule =
    "transformers' BertForMaskedLM.from_pretrained(DIR) (BertForPreTraining with "
    "model.next_sentence), or BertForSequenceClassification.from_pretrained(DIR) for a new "
    "classification head on the pretrained encoder; AutoTokenizer.from_pretrained(DIR) encodes "
    "text to the ids the run trained on";
constexpr const char* kFolderPython =
    "from transformers import AutoTokenizer, BertForMaskedLM\n"
    "tokenizer = AutoTokenizer.from_pretrained(\"{0}\")\n"
    "model = BertForMaskedLM.from_pretrained(\"{0}\")\n";
constexpr const char* kGpt2FolderModule =
    "transformers' GPT2LMHeadModel.from_pretrained(DIR) (lm_head tied to transformer.wte); "
    "AutoTokenizer.from_pretrained(DIR) encodes text to the ids the run trained on";
constexpr const char* kGpt2FolderPython =
    "from transformers import AutoTokenizer, GPT2LMHeadModel\n"
    "tokenizer = AutoTokenizer.from_pretrained(\"{0}\")\n"
    "model = GPT2LMHeadModel.from_pretrained(\"{0}\")\n";

// --format hf's --out: a folder that exists or can be made (its parent exists), not a file.
void check_output_folder(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    throw InputError(fmt::format(
        "--out {}: exists and is not a folder; --format hf writes a folder (config.json, "
        "model.safetensors, the tokenizer): give a folder's path",
        out));
  }
  fs::path folder = fs::absolute(out, ec);
  if (!folder.has_filename()) folder = folder.parent_path();  // "DIR/"
  const auto parent = folder.parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw InputError(fmt::format("--out {}: its parent folder {} does not exist; create it first",
                                 out, parent.string()));
  }
  // Where the files will be created must take them, found out before the run's weights are read
  // and before the folder is made. A probe file rather than access(2): access says yes to root on
  // a read-only mount or a filesystem that refuses new files (/proc), where only trying tells.
  const fs::path writes_into = fs::is_directory(folder, ec) ? folder : parent;
  std::string probe = (writes_into / ".batchlab-export-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw InputError(fmt::format(
        "--out {}: cannot create files in {} ({}); give a folder you can write, or change its "
        "permissions",
        out, writes_into.string(), std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string required(const Args& args, const std::string& name, const std::string& what) {
  auto value = args.value(name);
  if (!value || value->empty()) {
    throw UsageError(fmt::format("missing --{} {}\nusage: {}", name, what, args.usage()));
  }
  return *value;
}

std::string checkpoint_dir(const Args& args, const std::string& db,
                           const analysis::RunToExport& run) {
  if (auto dir = args.value("checkpoint-dir")) return *dir;
  const auto candidates = sweeps::checkpoint_dir_candidates(db, run.sweep_name, run.run_id);
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec)) return dir;
  }
  throw InputError(fmt::format(
      "run {} has no checkpoint folder where batchlab keeps them ({}); pass --checkpoint-dir DIR "
      "(a run trained with --checkpoint-dir, or a sweep with sweep.runs_dir: "
      "<runs_dir>/<run id>/checkpoints/<run id>)",
      run.run_id, fmt::join(candidates, ", ")));
}

}  // namespace

int cmd_export(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"db", true, false},
             {"run", true, false},
             {"checkpoint", true, false},
             {"checkpoint-dir", true, false},
             {"format", true, false},
             {"out", true, false}},
            kExportUsage);
  const std::string db = required(args, "db", "PATH");
  const std::string run_id = required(args, "run", "ID");
  const std::string out = required(args, "out", "FILE.pt");
  const std::string which = args.value("checkpoint").value_or("final");
  const auto format = experiments::export_format(args.value("format").value_or(""), out);
  const bool folder = format == experiments::ExportFormat::huggingface;
  const std::string card_path =
      folder ? (fs::path(out) / kFolderCard).string() : analysis::model_card_path(out);
  // Refused before anything is read or written: a folder, a device, a missing folder.
  if (folder) {
    check_output_folder(out);
  } else {
    check_output_path(out, "--out");
    check_output_path(card_path, "the card (--out with .json)");
  }

  const analysis::RunToExport run = analysis::read_run_to_export(db, run_id);
  config::LoadOptions load;
  load.read_init_file = false;  // the weights come from the checkpoint, not model.init_from
  const auto cfg = config::parse_experiment(
      run.config_toml, fmt::format("{}: runs.config_toml of run {}", db, run_id), load);
  const std::string dir = checkpoint_dir(args, db, run);
  const std::string file = experiments::choose_checkpoint(dir, which, cfg, run_id);
  const auto exported = experiments::export_weights(cfg, run_id, file, format);

  analysis::ExportedWeightsInfo info;
  info.weights_file = out;
  info.names = exported.names;
  info.tensors = exported.tensors;
  info.checkpoint = which;
  info.checkpoint_file = file;
  info.step = exported.step;
  if (exported.best) {
    info.best_metric = exported.best->metric;
    info.best_value = exported.best->value;
  }
  const bool gpt2 = models::is_gpt2_arch(cfg.model.arch);
  info.module =
      folder ? std::string(gpt2 ? kGpt2FolderModule : kFolderModule) : exported.module.describe;
  info.module_python =
      folder ? fmt::format(fmt::runtime(gpt2 ? kGpt2FolderPython : kFolderPython), out)
             : exported.module.python;
  info.module_promised = folder || exported.module.promised;
  // The weights and their card appear together or not at all (core/atomic_file.h).
  if (folder) std::filesystem::create_directories(out);
  AtomicFiles files;
  for (const auto& f : exported.files) {
    files.write(f.name.empty() ? out : (fs::path(out) / f.name).string(), f.bytes);
  }
  files.write(card_path, analysis::model_card_json(db, run, info));
  files.commit();

  fmt::print("exported run {} ({}), checkpoint {} = step {} ({}): {} tensors, {} names -> {}\n",
             run_id, run.status, which, exported.step, file, exported.tensors, exported.names, out);
  fmt::print("PyTorch module: {}\n", info.module);
  fmt::print("card: {}\n", card_path);
  if (which == "final" && run.status != "done" && run.status != "stopped") {
    fmt::print("note: the run's status is {}: its newest checkpoint is not the end of training\n",
               run.status);
  }
  return kExitOk;
}

}  // namespace batchlab::cli
