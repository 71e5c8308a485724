package io.memwire.shuffle.service;

/** A request the service refuses, with the protocol's error code. */
final class Refused extends Exception {
  private static final long serialVersionUID = 1L;
  final int code;

  Refused(int code, String message) {
    super(message);
    this.code = code;
  }
}
