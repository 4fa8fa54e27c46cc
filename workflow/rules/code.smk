# The code each job runs (sentrepro.code.codedeps). Every rule that runs sentrepro code has params.code = the
# fingerprint of what its shell command imports, so editing a module reruns exactly the jobs that run it.
from sentrepro.code.codedeps import rule_code, shell_entry
from sentrepro.code.entry_data import by_entry_files, data_entries_param


def job_code(entry: str, suite: str | None = None):
    """params.code where each job runs one method (wildcard ``method``), and for evaluation one suite: the
    command's code plus the units the job runs (the method kind's, the suite's: module and metadata). So an
    edit of one method's or suite's unit reruns its jobs only, and a new unit none (registry.job_entries)."""

    def code(w):
        return rule_code(registry.job_entries(entry, method_kind(w.method), suite))

    code.entry = entry
    return code


def unit_code(entry: str, unit_module):
    """params.code of a data job: the command's code plus the benchmark unit it reads (``unit_module(w)``), so
    an edit of one benchmark's module reruns the fixture and check jobs of that benchmark only."""

    def code(w):
        return rule_code([entry, unit_module(w)])

    code.entry = entry
    return code


def figure_code(entry: str):
    """params.code of the figure rule: the command's code plus the figure's unit (its module and metadata)."""

    def code(w):
        return rule_code([entry, registry.unit_entry("figures", w.figure)])

    code.entry = entry
    return code


def entry_data(entry: str, reads):
    """params.data_entries of a rule whose code reads a package file entry by entry (reported.yaml;
    sentrepro.code.entry_data): the fingerprints of exactly the entries its job reads (``reads(w)``: file ->
    entry names, derived from what the job reads), so an edit of one entry reruns the jobs reading it."""

    def data_entries(w):
        return data_entries_param(entry, reads(w))

    data_entries.entry = entry
    return data_entries


def check_rule_code():
    """Every rule that runs sentrepro code has params.code = rule_code(<the entry its shell command
    runs>) -- or job_code/figure_code/unit_code(<entry>) when a unit adds a module per job -- so the command
    is the one source of which code a rule depends on; a rule whose code param names anything else (a
    hand-kept list) stops the workflow here."""
    for defined in workflow.rules:
        entry = shell_entry(defined.shellcmd or "")
        if entry is None:
            continue
        code = dict(defined.params.items()).get("code")
        if callable(code):
            if getattr(code, "entry", None) != entry:
                raise WorkflowError(f"rule {defined.name} runs '{entry}' but its params.code is a function for "
                                    f"{getattr(code, 'entry', None)!r}")
        elif code != rule_code(entry):
            raise WorkflowError(f"rule {defined.name} runs '{entry}' but its params.code is not "
                                f"rule_code({entry!r}) (sentrepro.code.codedeps); set code=rule_code({entry!r})")
        # a file read entry by entry is in no fingerprint: its readers pass the entries they read instead
        read = by_entry_files(entry)
        entries = dict(defined.params.items()).get("data_entries")
        if read and getattr(entries, "entry", None) != entry:
            raise WorkflowError(f"rule {defined.name} runs '{entry}', whose code reads {', '.join(read)} entry by "
                                f"entry, but has no params.data_entries=entry_data({entry!r}, <the entries a job "
                                "reads>) (sentrepro.code.entry_data): an edit of an entry would rerun nothing")
        if entries is not None and not read:
            raise WorkflowError(f"rule {defined.name} has params.data_entries but its code ('{entry}') reads no "
                                "package file entry by entry")
