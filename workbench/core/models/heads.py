"""A model's classifier head: where it sits, a new one sized to the classes, and the network
without it.

torchvision's families keep their last Linear in different places: ``fc`` (ResNet, RegNet,
ShuffleNet, and the small CNN), the last Linear of ``classifier`` (MobileNet, EfficientNet,
ConvNeXt), ``heads.head`` (ViT) and ``head`` (Swin). Fine-tune modes, the frozen-backbone
feature cache and weight files all ask here, so they always speak of the same layer.
"""

from __future__ import annotations

import copy

from torch import nn

# Where a single Linear head may sit, in the order they are tried.
_HEAD_PATHS = ("fc", "heads.head", "head")


def head_path(model: nn.Module) -> str:
    """The dotted name of ``model``'s classifier Linear: 'fc', 'heads.head', 'head' or
    'classifier.<index>'.

    Raises:
        TypeError: the model has none of these.
    """
    for path in _HEAD_PATHS:
        try:
            module = model.get_submodule(path)
        except AttributeError:
            continue
        if isinstance(module, nn.Linear):
            return path
    classifier = getattr(model, "classifier", None)
    if isinstance(classifier, nn.Sequential):
        linears = [name for name, child in classifier.named_children()
                   if isinstance(child, nn.Linear)]
        if linears:
            return f"classifier.{linears[-1]}"
    raise TypeError(f"{type(model).__name__} has no classifier head Workbench knows "
                    "(a Linear 'fc', 'head' or 'heads.head', or one inside 'classifier')")


def classifier_head(model: nn.Module) -> nn.Linear:
    """``model``'s last Linear, the one that gives the logits."""
    head = model.get_submodule(head_path(model))
    assert isinstance(head, nn.Linear)
    return head


def head_state_prefix(model: nn.Module) -> str:
    """The state-dict key prefix of the head, e.g. 'fc.' or 'classifier.3.'."""
    return head_path(model) + "."


def replace_head(model: nn.Module, num_classes: int) -> nn.Linear:
    """Put a fresh ``num_classes``-output Linear where ``model``'s head was; returns it."""
    path = head_path(model)
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    old = classifier_head(model)
    new = nn.Linear(old.in_features, num_classes, bias=old.bias is not None)
    setattr(parent, name, new)
    return new


def without_head(model: nn.Module) -> nn.Module:
    """``model`` with its head replaced by Identity: images -> the head's input features.

    The model is not changed and nothing is copied but the modules on the way to the head
    (their child tables, so the new Identity is not seen by ``model``); every layer and
    weight is shared, so training the model shows in the result.
    """
    names = head_path(model).split(".")
    root = _shallow_copy(model)
    parent = root
    for name in names[:-1]:
        child = _shallow_copy(parent._modules[name])
        parent._modules[name] = child
        parent = child
    parent._modules[names[-1]] = nn.Identity()
    return root


def split_backbone_head(model: nn.Module) -> tuple[nn.Module, nn.Linear]:
    """``(backbone, head)`` with ``head(backbone(x))`` equal to ``model(x)``; both share
    ``model``'s layers and weights."""
    return without_head(model), classifier_head(model)


def _shallow_copy(module: nn.Module) -> nn.Module:
    shallow = copy.copy(module)
    shallow._modules = dict(module._modules)
    return shallow
