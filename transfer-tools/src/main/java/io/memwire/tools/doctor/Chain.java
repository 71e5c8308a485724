package io.memwire.tools.doctor;

import java.util.ArrayList;
import java.util.List;

/** A chain of rules as read from a ruleset: its name, its policy and its rules' text, in order. */
final class Chain {
  final String name;
  String policy; // accept/drop for base chains, null otherwise
  final List<String> lines = new ArrayList<>();

  Chain(String name) {
    this.name = name;
  }
}
