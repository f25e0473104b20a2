// RUN: nnvm-opt %s | filecheck %s
// RUN: nnvm-opt %s --print-op-generic | nnvm-opt | filecheck %s

// Parse, print and round-trip the recurrent ops (three results for lstm, two for gru).

// CHECK-LABEL: @lstm
// CHECK-NEXT: %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
func.func @lstm(%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>, %b: tensor<1x32xf32>, %h0: tensor<1x2x4xf32>, %c0: tensor<1x2x4xf32>, %p: tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) {
  %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %y, %y_h, %y_c : tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
}

// CHECK-LABEL: @lstm_bidirectional
// CHECK-NEXT: %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4, direction = "bidirectional", clip = 10.0, input_forget = true, layout = 1} : (tensor<2x5x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x12xf32>) -> (tensor<2x5x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
func.func @lstm_bidirectional(%x: tensor<2x5x3xf32>, %w: tensor<2x16x3xf32>, %r: tensor<2x16x4xf32>, %b: tensor<2x32xf32>, %h0: tensor<2x2x4xf32>, %c0: tensor<2x2x4xf32>, %p: tensor<2x12xf32>) -> tensor<2x5x2x4xf32> {
  %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4, direction = "bidirectional", clip = 1.0e+01, input_forget = true, layout = 1} : (tensor<2x5x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x12xf32>) -> (tensor<2x5x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  func.return %y : tensor<2x5x2x4xf32>
}

// CHECK-LABEL: @lstm_reverse
// CHECK-NEXT: %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4, direction = "reverse"} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
func.func @lstm_reverse(%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>, %b: tensor<1x32xf32>, %h0: tensor<1x2x4xf32>, %c0: tensor<1x2x4xf32>, %p: tensor<1x12xf32>) -> tensor<1x2x4xf32> {
  %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4, direction = "reverse"} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %y_h : tensor<1x2x4xf32>
}

// CHECK-LABEL: @gru
// CHECK-NEXT: %y, %y_h = nnvm.gru %x, %w, %r, %b, %h0 {hidden_size = 4, linear_before_reset = true} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
func.func @gru(%x: tensor<5x2x3xf32>, %w: tensor<1x12x3xf32>, %r: tensor<1x12x4xf32>, %b: tensor<1x24xf32>, %h0: tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>) {
  %y, %y_h = nnvm.gru %x, %w, %r, %b, %h0 {hidden_size = 4, linear_before_reset = true} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %y, %y_h : tensor<5x1x2x4xf32>, tensor<1x2x4xf32>
}

