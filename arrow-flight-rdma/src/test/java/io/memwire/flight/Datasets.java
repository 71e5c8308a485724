package io.memwire.flight;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.complex.impl.UnionMapWriter;
import org.apache.arrow.vector.complex.impl.UnionWriter;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryEncoder;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The data sets the tests stream: each is a schema plus batches filled into one root (the producer
 * reuses it, like most producers), covering the vector types the issue lists.
 */
final class Datasets {
  private Datasets() {}

  /** Names of the data sets every round-trip test covers. */
  static final List<String> ROUND_TRIP =
      List.of(
          "ints",
          "strings",
          "list",
          "struct",
          "map",
          "union",
          "decimal",
          "dict",
          "sliced",
          "allnull",
          "zerorows",
          "emptybuffers",
          "meta",
          "empty");

  static final int[] SIZES = {1000, 0, 37, 4096};

  static Schema schema(String name) {
    switch (name) {
      case "ints":
        return new Schema(
            List.of(
                Field.nullable("i", new ArrowType.Int(32, true)),
                Field.nullable("l", new ArrowType.Int(64, true))));
      case "strings":
      case "emptybuffers":
        return new Schema(
            List.of(
                Field.nullable("s", ArrowType.Utf8.INSTANCE),
                Field.nullable("ls", ArrowType.LargeUtf8.INSTANCE)));
      case "list":
        return new Schema(
            List.of(
                new Field(
                    "li",
                    FieldType.nullable(ArrowType.List.INSTANCE),
                    List.of(Field.nullable("$data$", new ArrowType.Int(32, true))))));
      case "struct":
        return new Schema(
            List.of(
                new Field(
                    "st",
                    FieldType.nullable(ArrowType.Struct.INSTANCE),
                    List.of(
                        Field.nullable("a", new ArrowType.Int(32, true)),
                        Field.nullable("b", ArrowType.Utf8.INSTANCE)))));
      case "map":
        return new Schema(
            List.of(
                new Field(
                    "m",
                    FieldType.nullable(new ArrowType.Map(false)),
                    List.of(
                        new Field(
                            "entries",
                            FieldType.notNullable(ArrowType.Struct.INSTANCE),
                            List.of(
                                Field.notNullable("key", ArrowType.Utf8.INSTANCE),
                                Field.nullable("value", new ArrowType.Int(32, true))))))));
      case "union":
        return new Schema(
            List.of(
                new Field(
                    "u",
                    FieldType.nullable(
                        new ArrowType.Union(
                            org.apache.arrow.vector.types.UnionMode.Sparse,
                            new int[] {
                              org.apache.arrow.vector.types.Types.MinorType.INT.ordinal(),
                              org.apache.arrow.vector.types.Types.MinorType.BIGINT.ordinal()
                            })),
                    List.of(
                        Field.nullable("int", new ArrowType.Int(32, true)),
                        Field.nullable("bigint", new ArrowType.Int(64, true))))));
      case "decimal":
        return new Schema(List.of(Field.nullable("d", new ArrowType.Decimal(38, 10, 128))));
      case "dict":
        return new Schema(
            List.of(
                new Field(
                    "color",
                    new FieldType(
                        true, new ArrowType.Int(32, true), new DictionaryEncoding(7L, false, null)),
                    null)));
      case "sliced":
      case "allnull":
      case "zerorows":
      case "meta":
      case "empty":
        return schema("ints");
      default:
        if (name.startsWith("many:")
            || name.startsWith("zc:")
            || name.startsWith("zcsame:")
            || name.startsWith("fail:")) {
          return new Schema(List.of(Field.nullable("l", new ArrowType.Int(64, true))));
        }
        throw new IllegalArgumentException("no data set named " + name);
    }
  }

  /** The dictionary of data set "dict". */
  static final String[] COLORS = {"red", "green", "blue", "cyan", "magenta"};

  static Dictionary colorDictionary(BufferAllocator alloc) {
    VarCharVector v = new VarCharVector("colors", alloc);
    v.allocateNew();
    for (int i = 0; i < COLORS.length; i++) {
      v.setSafe(i, COLORS[i].getBytes(StandardCharsets.UTF_8));
    }
    v.setValueCount(COLORS.length);
    return new Dictionary(v, new DictionaryEncoding(7L, false, null));
  }

  /** Streams a data set into the listener; used by the test producer for every ticket. */
  static void stream(
      String name,
      BufferAllocator alloc,
      org.apache.arrow.flight.FlightProducer.ServerStreamListener listener) {
    Schema schema = schema(name);
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, alloc)) {
      DictionaryProvider.MapDictionaryProvider dicts =
          new DictionaryProvider.MapDictionaryProvider();
      Dictionary colors = null;
      if (name.equals("dict")) {
        colors = colorDictionary(alloc);
        dicts.put(colors);
      }
      try {
        listener.start(root, dicts);
        switch (name) {
          case "empty":
            break;
          case "sliced":
            streamSliced(root, alloc, listener);
            break;
          case "meta":
            int b = 0;
            for (int rows : new int[] {10, 20}) {
              fillInts(root, rows, b++);
              byte[] md = ("batch-" + b).getBytes(StandardCharsets.UTF_8);
              org.apache.arrow.memory.ArrowBuf buf = alloc.buffer(md.length);
              buf.setBytes(0, md);
              buf.writerIndex(md.length);
              listener.putNext(buf);
            }
            byte[] md = "just-metadata".getBytes(StandardCharsets.UTF_8);
            org.apache.arrow.memory.ArrowBuf buf = alloc.buffer(md.length);
            buf.setBytes(0, md);
            buf.writerIndex(md.length);
            listener.putMetadata(buf);
            fillInts(root, 5, 9);
            listener.putNext();
            break;
          default:
            for (int i = 0; i < SIZES.length; i++) {
              int rows = name.equals("zerorows") ? 0 : SIZES[i];
              fill(name, root, rows, i, colors);
              listener.putNext();
            }
        }
        listener.completed();
      } finally {
        if (colors != null) {
          colors.getVector().close();
        }
      }
    }
  }

  private static void streamSliced(
      VectorSchemaRoot root,
      BufferAllocator alloc,
      org.apache.arrow.flight.FlightProducer.ServerStreamListener listener) {
    try (VectorSchemaRoot full = VectorSchemaRoot.create(root.getSchema(), alloc)) {
      fillInts(full, 3000, 1);
      // Byte-aligned slices share the parent's buffers at an offset; odd ones are copied.
      int[][] ranges = {{8, 1000}, {13, 777}, {2999, 1}, {0, 3000}};
      for (int[] r : ranges) {
        for (int c = 0; c < full.getFieldVectors().size(); c++) {
          FieldVector src = full.getVector(c);
          src.makeTransferPair(root.getVector(c)).splitAndTransfer(r[0], r[1]);
        }
        root.setRowCount(r[1]);
        listener.putNext();
      }
    }
  }

  static void fill(String name, VectorSchemaRoot root, int rows, int batch, Dictionary colors) {
    root.allocateNew();
    switch (name) {
      case "ints":
      case "zerorows":
        fillInts(root, rows, batch);
        return;
      case "allnull":
        IntVector iv = (IntVector) root.getVector(0);
        BigIntVector lv = (BigIntVector) root.getVector(1);
        for (int r = 0; r < rows; r++) {
          iv.setNull(r);
          lv.setNull(r);
        }
        root.setRowCount(rows);
        return;
      case "strings":
      case "emptybuffers":
        {
          VarCharVector s = (VarCharVector) root.getVector(0);
          LargeVarCharVector ls = (LargeVarCharVector) root.getVector(1);
          for (int r = 0; r < rows; r++) {
            String v = name.equals("emptybuffers") ? "" : "row " + r + " of batch " + batch;
            if (!name.equals("emptybuffers") && r % 7 == 3) {
              s.setNull(r);
            } else {
              s.setSafe(r, v.getBytes(StandardCharsets.UTF_8));
            }
            if (!name.equals("emptybuffers") && r % 5 == 1) {
              ls.setNull(r);
            } else {
              ls.setSafe(r, (v + v).getBytes(StandardCharsets.UTF_8));
            }
          }
          root.setRowCount(rows);
          return;
        }
      case "list":
        {
          ListVector lst = (ListVector) root.getVector(0);
          UnionListWriter w = lst.getWriter();
          for (int r = 0; r < rows; r++) {
            w.setPosition(r);
            if (r % 9 == 4) {
              continue; // null list
            }
            w.startList();
            for (int k = 0; k < r % 4; k++) {
              w.writeInt(r * 10 + k);
            }
            w.endList();
          }
          lst.setValueCount(rows);
          root.setRowCount(rows);
          return;
        }
      case "struct":
        {
          StructVector st = (StructVector) root.getVector(0);
          IntVector a = (IntVector) st.getChild("a");
          VarCharVector b = (VarCharVector) st.getChild("b");
          for (int r = 0; r < rows; r++) {
            if (r % 6 == 5) {
              st.setNull(r);
              continue;
            }
            st.setIndexDefined(r);
            if (r % 4 == 0) {
              a.setNull(r);
            } else {
              a.setSafe(r, r * 3);
            }
            b.setSafe(r, ("s" + r).getBytes(StandardCharsets.UTF_8));
          }
          st.setValueCount(rows);
          root.setRowCount(rows);
          return;
        }
      case "map":
        {
          MapVector m = (MapVector) root.getVector(0);
          UnionMapWriter w = m.getWriter();
          for (int r = 0; r < rows; r++) {
            w.setPosition(r);
            if (r % 8 == 7) {
              continue;
            }
            w.startMap();
            for (int k = 0; k < r % 3; k++) {
              w.startEntry();
              byte[] key = ("k" + k).getBytes(StandardCharsets.UTF_8);
              org.apache.arrow.memory.ArrowBuf kb = m.getAllocator().buffer(key.length);
              kb.setBytes(0, key);
              w.key().varChar().writeVarChar(0, key.length, kb);
              kb.close();
              w.value().integer().writeInt(r + k);
              w.endEntry();
            }
            w.endMap();
          }
          m.setValueCount(rows);
          root.setRowCount(rows);
          return;
        }
      case "union":
        {
          UnionVector u = (UnionVector) root.getVector(0);
          UnionWriter w = new UnionWriter(u);
          for (int r = 0; r < rows; r++) {
            w.setPosition(r);
            if (r % 2 == 0) {
              w.writeInt(r);
            } else {
              w.writeBigInt((long) r << 33);
            }
          }
          u.setValueCount(rows);
          root.setRowCount(rows);
          return;
        }
      case "decimal":
        {
          DecimalVector d = (DecimalVector) root.getVector(0);
          for (int r = 0; r < rows; r++) {
            if (r % 10 == 9) {
              d.setNull(r);
            } else {
              d.setSafe(
                  r,
                  new BigDecimal(r + "." + (r * 7919L % 10_000_000_000L))
                      .setScale(10, java.math.RoundingMode.UNNECESSARY));
            }
          }
          d.setValueCount(rows);
          root.setRowCount(rows);
          return;
        }
      case "dict":
        {
          try (VarCharVector raw = new VarCharVector("raw", root.getVector(0).getAllocator())) {
            raw.allocateNew();
            for (int r = 0; r < rows; r++) {
              if (r % 11 == 10) {
                raw.setNull(r);
              } else {
                raw.setSafe(
                    r, COLORS[(r + batch) % COLORS.length].getBytes(StandardCharsets.UTF_8));
              }
            }
            raw.setValueCount(rows);
            try (FieldVector enc = (FieldVector) DictionaryEncoder.encode(raw, colors)) {
              enc.makeTransferPair(root.getVector(0)).transfer();
            }
          }
          root.setRowCount(rows);
          return;
        }
      default:
        throw new IllegalArgumentException(name);
    }
  }

  static void fillInts(VectorSchemaRoot root, int rows, int batch) {
    root.allocateNew();
    IntVector i = (IntVector) root.getVector(0);
    BigIntVector l = (BigIntVector) root.getVector(1);
    for (int r = 0; r < rows; r++) {
      if (r % 3 == 1) {
        i.setNull(r);
      } else {
        i.setSafe(r, r * 31 + batch);
      }
      if (r % 5 == 2) {
        l.setNull(r);
      } else {
        l.setSafe(r, ((long) r << 20) ^ batch);
      }
    }
    root.setRowCount(rows);
  }
}
