# Sourced by the Slurm tests: `tiny_base EPOCHS` prints the tiny synthetic base experiment the
# sweep tests use (tests/sweeps/sweep_cli_util.h tiny_base: 512 synthetic images, small_resnet of
# width 8, batch 64 as 2 x 32, SGD, one thread), about a second per epoch on 2 cores.
tiny_base() {
  cat <<TOML
schema_version = 1
[model]
arch = "small_resnet"
width = 8
[data]
dataset = "synthetic"
train_size = 512
test_size = 256
eval_train_samples = 256
[batch]
global = 64
micro = 32
[optim]
name = "sgd"
base_lr = 0.05
[schedule]
epochs = $1
[train]
threads = 1
TOML
}
