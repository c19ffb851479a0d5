"""Text scanning shared by the guardrails and the data plane: the built-in detectors (`textscan.detectors`:
emails, phone numbers, addresses, names, prompt injections, ...) and the texts of a request they read
(`textscan.texts`), and the prompt classifier (`textscan.classifier`) of the rankings and the auto-router.

Plain code below inference and the policy apps (docs/architecture.md): it imports only the kernel and Django's
settings.
"""
