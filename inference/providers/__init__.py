"""Provider adapters: translate the Responses request to each upstream wire format and back."""
