"""ViT on IPUs: patch embeddings on IPU 0, encoder layers by layers_per_ipu, head on the last IPU."""
from __future__ import annotations

from transformers import ViTForImageClassification, ViTModel

from ..modeling_utils import PipelineMixin, register
from ._placement import begin, last_ipu, place_layers


def _encoder_layers(vit):
    """transformers 4.x keeps the layers in vit.encoder.layer; 5.x in vit.layers."""
    return vit.encoder.layer if hasattr(vit, "encoder") else vit.layers


def _place_vit(model, vit) -> None:
    begin(vit, "embeddings", "Embedding", 0)
    model.layer_ipu = place_layers(model, _encoder_layers(vit), "Encoder", checkpoint_last=True)
    begin(vit, "layernorm", "LayerNorm", last_ipu(model))


@register(ViTModel)
class PipelinedViTModel(ViTModel, PipelineMixin):
    """The final layer norm (and pooler) on the last IPU."""

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_vit(self, self)
        return self


@register(ViTForImageClassification)
class PipelinedViTForImageClassification(ViTForImageClassification, PipelineMixin):
    """The final layer norm and the classifier on the last IPU."""

    def parallelize(self, **kwargs):
        super().parallelize()
        _place_vit(self, self.vit)
        begin(self, "classifier", "Classifier", last_ipu(self))
        return self
