//! What each way of exposing the tools costs a model.
