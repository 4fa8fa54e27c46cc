# Input functions, params and targets of workflow/rules/tokenize.smk, which includes this file first.

def tokenizer_backbone(tokenizer: str) -> str:
    """The backbone a tokenizer cache is built from: the first (by name) that names it."""
    names = sorted(b for b, spec in config["backbones"].items() if spec["tokenizer"] == tokenizer)
    if not names:
        raise WorkflowError(f"no backbone uses tokenizer '{tokenizer}'")
    return names[0]


def tokenizer_model(tokenizer: str) -> str:
    """The model a tokenizer cache is built from."""
    return config["backbones"][tokenizer_backbone(tokenizer)]["model"]
