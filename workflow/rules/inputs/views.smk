# Input functions, params and targets of workflow/rules/views.smk, which includes this file first.

VIEWS_SUFFIX = "-views"  # MoCoUTRL's views of corpus C are the corpus "C-views"


def views_spec() -> dict:
    """The config's views section, checked when a run needs it."""
    spec = config.get("views")
    if spec is None:
        raise WorkflowError("a method in the matrix trains on views (MoCoUTRL) but config.yaml has no 'views' section")
    if spec["wordnet_source"] not in config["data"]["sources"]:
        raise WorkflowError(f"views.wordnet_source: unknown source '{spec['wordnet_source']}'")
    return spec
