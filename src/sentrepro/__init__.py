"""sentrepro: regenerate and audit the tables of ConPVP, PromptBERT and MoCoUTRL."""

__version__ = "0.1.0"
