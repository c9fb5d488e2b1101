#!/usr/bin/env bash
# Regenerates the shipped configs of the models torchvision has
# (configs/models/resnet50.yaml, vgg16.yaml) with scripts/strata-profile,
# which counts their figures by running torchvision's networks. The job
# figures (batch, samples, min_throughput) are ours: docs/data.md gives the
# reasons. The other shipped models (ctr-dlrm, bert-base, gpt2-small) are not
# in torchvision: scripts/derive_layers.py writes them.
#
#   scripts/profile_models.sh        (about 15 s; needs python3-torchvision)
set -euo pipefail
cd "$(dirname "$0")/.."
prof=scripts/strata-profile
epochs90=115305030  # 90 epochs of ImageNet-1k (1,281,167 training images)
crop=150528         # io: one decoded 224x224 RGB crop read as uint8

"$prof" torchvision.models:resnet50 --batch 64 --samples $epochs90 --min-throughput 2200 --io $crop \
  --comment "Architecture: torchvision ResNet-50 v1.5, ImageNet 224x224, fp32; stem, 16 bottleneck blocks, head." \
  --comment "Job: batch 64 images per GPU (fp32); samples = 90 epochs of ImageNet-1k; min_throughput 2200 images/s (90 epochs in ~15 h)." \
  --comment "io: one decoded 224x224 RGB crop read as uint8 (150528 B). Regenerate all: scripts/profile_models.sh." \
  >configs/models/resnet50.yaml.tmp
mv configs/models/resnet50.yaml.tmp configs/models/resnet50.yaml

vgg_names=conv1,conv2,conv3,conv4,conv5,conv6,conv7,conv8,conv9,conv10,conv11,conv12,conv13,fc6,fc7,fc8
"$prof" torchvision.models:vgg16 --batch 64 --samples $epochs90 --min-throughput 400 --io $crop --names $vgg_names \
  --comment "Architecture: torchvision VGG-16 (configuration D), ImageNet 224x224, fp32; 13 conv (ReLU and max-pool folded into the conv before) + 3 fc (ReLU, dropout folded)." \
  --comment "Job: batch 64 images per GPU (fp32); samples = 90 epochs of ImageNet-1k; min_throughput 400 images/s (90 epochs in ~80 h)." \
  --comment "io: one decoded 224x224 RGB crop read as uint8 (150528 B). Regenerate all: scripts/profile_models.sh." \
  >configs/models/vgg16.yaml.tmp
mv configs/models/vgg16.yaml.tmp configs/models/vgg16.yaml
echo "wrote configs/models/resnet50.yaml, configs/models/vgg16.yaml"
